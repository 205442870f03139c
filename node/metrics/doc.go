// Package metrics holds a node's Prometheus instruments: a registry of the
// node's own (never client_golang's global default registry, so two nodes
// in one process keep apart), the Go runtime and process collectors, and
// the histograms and counters the node's parts record into. GET /metrics
// (node/httpapi) serves it, with the figures read at each scrape.
//
// The parts that record do not import this package: each declares the
// hook it calls (memory.Config.Timed, mcptools.Options.OnToolCall,
// cluster.Observer) and the node wires a Metrics method to it, so the
// memory core, the MCP tools and the cluster loop stay free of
// client_golang and the simulator runs them with no hook at all. httpapi
// takes a *Metrics (Config.Metrics), since it serves the registry.
//
// Decisions:
//
//   - Bounded series. Every label takes its values from a set the code
//     fixes: the HTTP route is the ServeMux pattern that matched (a path no
//     route claims is the catch-all "/"), never the raw path; the MCP tool
//     is a name the server offers, or "unknown" (UnknownTool) for any other;
//     outcome, op, path, direction and kind are enumerations. A client
//     cannot mint series by sending odd requests.
//   - Classic histograms with explicit buckets, which every Prometheus
//     reads and the text format carries. Request and operation latencies
//     start at 50 µs (a search of a small in-memory index) and grow ×2.5 to
//     ~26 s; lags and sync durations start at 1 ms and grow ×4 to ~4.7 h (a
//     sync after a node was down carries writes that old); sizes run from
//     256 B to 64 MiB. client_golang's default buckets (5 ms to 10 s) would
//     put nearly every local operation in the first bucket.
//   - Durations come from the process's monotonic clock (time.Since) in
//     the HTTP and memory paths, and from cluster.Config.Clock in the
//     cluster loop, whose time the simulator controls.
//   - Replication lag is measured against the newest write a delta carries
//     (its hybrid logical timestamp's wall part, the author's clock), so it
//     includes the two clocks' skew; a negative lag (the author's clock
//     ahead) counts as 0. Live deltas and sync answers are kept apart by
//     the path label: a sync answer may carry writes made hours before.
//   - Recording costs one labelled histogram observation per request,
//     per save or search and per applied delta: ~0.3 µs each
//     (BenchmarkHTTPRequest, median of 5 runs 140–580 ns on a loaded
//     2-core machine), against ~0.5 ms for a save and a search over
//     loopback. Measured side by side, the build before this package
//     (a415588) and after it, BenchmarkSaveSearchHTTP in node/httpapi at
//     2,000 operations: instructions per operation under callgrind (the
//     difference of 900- and 300-operation runs, /600) 1.699 M before,
//     1.691 M after (×0.995: below the run-to-run spread); process CPU
//     time, median of 8 interleaved runs, 1.035 s before, 1.02 s after
//     (×0.99). The wall-clock figures of those runs (median 661 µs before,
//     922 µs after, each run anywhere from 470 to 1,870 µs at a load
//     average of 25) measure the machine, not the change. Once per
//     process, setting up the collectors costs ~30 M instructions.
//
// The metric names, labels and units are listed in node/httpapi's doc.go,
// beside the route that serves them. grafana/mnemo.json is a dashboard of
// them; a test in package node checks that every metric its queries name
// is one a node exports.
package metrics
