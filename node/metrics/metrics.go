package metrics

import (
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Label values this package puts on its series. Every label takes its
// values from a set fixed here or by the caller's code (route patterns, tool
// names the MCP server knows), never from what a client sends.
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"

	PathLive = "live" // a delta pushed as it was written
	PathSync = "sync" // a delta in a digest sync answer

	DirectionSent     = "sent"
	DirectionReceived = "received"

	// UnknownTool is the tool label of a tools/call naming no tool the
	// server offers: a client's made-up names never become series.
	UnknownTool = "unknown"
	// UnmatchedRoute is the route label of a request no pattern matched
	// (the mux's redirects).
	UnmatchedRoute = "unmatched"
)

// Bucket bounds, in seconds or bytes. Latencies of a local node start well
// under a millisecond (an in-memory search, a save to the page cache), so the
// default buckets of client_golang (5 ms to 10 s) would put most of them in
// the first one.
var (
	// requestBuckets: 50 µs to ~26 s, ×2.5.
	requestBuckets = prometheus.ExponentialBuckets(50e-6, 2.5, 15)
	// lagBuckets: 1 ms to ~4.7 h, ×4 (a sync answer may carry writes
	// made hours before, while a node was down).
	lagBuckets = prometheus.ExponentialBuckets(1e-3, 4, 13)
	// byteBuckets: 256 B to 64 MiB, ×4.
	byteBuckets = prometheus.ExponentialBuckets(256, 4, 10)
)

// Metrics is one node's instruments and the registry that exposes them.
// Its methods are safe for concurrent use and do not block.
type Metrics struct {
	reg *prometheus.Registry

	httpDuration   *prometheus.HistogramVec
	toolDuration   *prometheus.HistogramVec
	memoryDuration *prometheus.HistogramVec
	replicationLag *prometheus.HistogramVec
	syncDuration   prometheus.Histogram
	syncBytes      prometheus.Histogram
	frameBytes     *prometheus.CounterVec
	frames         *prometheus.CounterVec
}

// New returns a node's metrics in a registry of their own, with the Go
// runtime's and the process's collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mnemo_http_request_duration_seconds",
			Help:    "HTTP requests to the node's API, by route pattern and status code: time until the handler returned.",
			Buckets: requestBuckets,
		}, []string{"route", "code"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mnemo_mcp_tool_call_duration_seconds",
			Help:    "MCP tool calls on /mcp, by tool; outcome is error when the tool answered with an error.",
			Buckets: requestBuckets,
		}, []string{"tool", "outcome"}),
		memoryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mnemo_memory_operation_duration_seconds",
			Help:    "Saves and searches in the memory service, whoever asked (HTTP, MCP, console); a save counts once it is durable.",
			Buckets: requestBuckets,
		}, []string{"op", "outcome"}),
		replicationLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mnemo_replication_lag_seconds",
			Help:    "For each peer delta applied here: time from its newest write's timestamp (the author's clock) to its application; path is live or sync.",
			Buckets: lagBuckets,
		}, []string{"path"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mnemo_sync_duration_seconds",
			Help:    "Digest syncs this node asked a peer for, per namespace: time from the request to the last message of the answer.",
			Buckets: lagBuckets,
		}),
		syncBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mnemo_sync_received_bytes",
			Help:    "Digest syncs this node asked a peer for, per namespace: bytes of namespace state the answer carried (before wire compression).",
			Buckets: byteBuckets,
		}),
		frameBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_replication_frame_bytes_total",
			Help: "Bytes of replication frames on the wire (compressed), by direction and message kind.",
		}, []string{"direction", "kind"}),
		frames: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_replication_frames_total",
			Help: "Replication frames, by direction and message kind.",
		}, []string{"direction", "kind"}),
	}
	m.reg.MustRegister(
		// The memstats and, of the runtime's own metrics, the live heap
		// (go_gc_heap_live_bytes: what the last collection found
		// reachable), which tells a heap that grows from one that only
		// fills toward its collector's goal between collections, as a
		// small node's RSS does by tens of MiB (README, "Soak").
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: liveHeapMetric})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpDuration, m.toolDuration, m.memoryDuration,
		m.replicationLag, m.syncDuration, m.syncBytes, m.frameBytes, m.frames,
	)
	return m
}

// liveHeapMetric matches the runtime metric of the live heap.
var liveHeapMetric = regexp.MustCompile(`^/gc/heap/live:bytes$`)

// Handler serves the registry's metrics, and those of extra (gathered at
// each scrape, after the registry's), in the format the scraper asks for
// (Prometheus text by default). A failing collector answers 500.
func (m *Metrics) Handler(extra ...prometheus.Collector) http.Handler {
	g := prometheus.Gatherers{m.reg}
	if len(extra) > 0 {
		r := prometheus.NewRegistry()
		for _, c := range extra {
			if err := r.Register(c); err != nil {
				return errorHandler{err}
			}
		}
		g = append(g, r)
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

type errorHandler struct{ err error }

func (e errorHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "metrics: "+e.err.Error(), http.StatusInternalServerError)
}

// HTTPRequest records one request: route is the pattern that matched ("" is
// UnmatchedRoute), never the raw path.
func (m *Metrics) HTTPRequest(route string, code int, took time.Duration) {
	if route == "" {
		route = UnmatchedRoute
	}
	m.httpDuration.WithLabelValues(route, strconv.Itoa(code)).Observe(took.Seconds())
}

// ToolCall records one MCP tool call (mcptools.Options.OnToolCall): tool is
// a name the server offers or UnknownTool.
func (m *Metrics) ToolCall(tool string, took time.Duration, failed bool) {
	m.toolDuration.WithLabelValues(tool, outcome(failed)).Observe(took.Seconds())
}

// MemoryOperation records a save or a search (memory.Config.Timed).
func (m *Metrics) MemoryOperation(op string, took time.Duration, err error) {
	m.memoryDuration.WithLabelValues(op, outcome(err != nil)).Observe(took.Seconds())
}

// DeltaApplied records a peer's delta applied here (cluster.Observer).
func (m *Metrics) DeltaApplied(live bool, lag time.Duration) {
	path := PathSync
	if live {
		path = PathLive
	}
	m.replicationLag.WithLabelValues(path).Observe(max(lag, 0).Seconds())
}

// SyncAnswered records a digest sync of one namespace that this node asked
// for and a peer answered in full (cluster.Observer).
func (m *Metrics) SyncAnswered(took time.Duration, bytes int) {
	m.syncDuration.Observe(max(took, 0).Seconds())
	m.syncBytes.Observe(float64(bytes))
}

// Frame records a replication frame of kind (the wire message kind's name)
// sent or received, of n bytes on the wire (cluster.Observer).
func (m *Metrics) Frame(sent bool, kind string, n int) {
	dir := DirectionReceived
	if sent {
		dir = DirectionSent
	}
	m.frames.WithLabelValues(dir, kind).Inc()
	m.frameBytes.WithLabelValues(dir, kind).Add(float64(n))
}

func outcome(failed bool) string {
	if failed {
		return OutcomeError
	}
	return OutcomeOK
}
