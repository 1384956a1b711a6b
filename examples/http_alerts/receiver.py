"""A webhook receiver for examples/http_alerts/job.toml: prints one line per alert.

    python examples/http_alerts/receiver.py [PORT]     # default 9099, on 127.0.0.1

Each POST body is one event as JSON (``webhook_format = "json"``: ``query``, ``series``,
``ts_ms``, ``time``, ``value``, ``payload``, ...). The line printed per alert is
``ALERT <query> <series> <time> value=<value>``; a body that is no JSON object is answered 400
(the job then dead-letters that alert: docs/http.md).
"""

from __future__ import annotations

import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Alerts(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # the http.server hook's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            event = json.loads(body)
            line = (
                f"ALERT {event['query']} {event['series']} {event['time']} value={event['value']}"
            )
        except (ValueError, KeyError, TypeError):
            self.send_response(400)
            self.end_headers()
            return
        print(line, flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:  # one line per alert, no access log
        pass


def stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # Ctrl-C or kill, also when started with SIGINT ignored (`cmd &`)


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9099
    server = HTTPServer(("127.0.0.1", port), Alerts)
    print(f"receiving alerts on http://127.0.0.1:{port}/alerts", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
