"""The framework every benchmark runs on: the registry, the runner and its workers, the one timer,
the results schema and file, the device's telemetry, nvcc and the SASS reader. Imports nothing
of the other rooms."""
