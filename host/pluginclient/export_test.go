package pluginclient

// BenchmarkCallsOf is benchmarkCalls, for the benchmarks of package
// pluginproto_test.
var BenchmarkCallsOf = benchmarkCalls
