"""HTTP for a running job: the API, ``/metrics``, the dashboard and the alert webhook.

``tsmon run job.toml --http 127.0.0.1:8080`` (or ``[http] listen`` in the job file) serves
:mod:`tsmon.http.app` from a thread of the job's process, fed after every batch by
:class:`~tsmon.http.live.Live`; ``[http] webhook`` POSTs every event
(:mod:`tsmon.http.webhook`). See docs/http.md.
"""

from tsmon.http.service import Service, attach, serve

__all__ = ["Service", "attach", "serve"]
