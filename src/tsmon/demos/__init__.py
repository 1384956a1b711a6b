"""The demos ``tsmon demo`` runs: on Spark (:mod:`tsmon.demos.spark`, the default) and
in-process (:mod:`tsmon.demos.inprocess`), on the built-in fleet generator."""
