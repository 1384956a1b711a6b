#!/usr/bin/env bash
# Fails with one clear line when Java 17+ (needed by Spark) is missing.
set -u
if ! command -v java >/dev/null 2>&1; then
  echo "tsmon needs Java 17 or newer for Spark and found no 'java' on PATH: install a JDK 17+ (e.g. 'apt-get install openjdk-17-jre-headless') and retry." >&2
  exit 1
fi
version=$(java -version 2>&1 | head -n 1 | sed -E 's/.*version "([0-9]+)(\.[0-9]+)*.*".*/\1/')
if ! [ "$version" -ge 17 ] 2>/dev/null; then
  echo "tsmon needs Java 17 or newer for Spark, found: $(java -version 2>&1 | head -n 1); install a JDK 17+ (e.g. 'apt-get install openjdk-17-jre-headless') and retry." >&2
  exit 1
fi
