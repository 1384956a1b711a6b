"""The Spark runtime: tsmon jobs on Structured Streaming (source nodes in executors, the
coordinator on the driver, a control channel between them)."""
