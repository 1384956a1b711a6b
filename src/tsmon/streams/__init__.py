"""Built-in input streams: a generated fleet of hosts and metrics (:mod:`tsmon.streams.fleet`)
and recorded series read from CSV files (:mod:`tsmon.streams.csv_series`)."""
