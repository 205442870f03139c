package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mnemohq/mnemo/node/metrics"
	"github.com/mnemohq/mnemo/sync/replica"
)

// serveTimed serves r through the mux and records its duration by the
// pattern that matched (r.Pattern, set by the mux on r itself) and the
// status written. The pattern, not the path, keeps the series bounded: a
// path no route claims is the catch-all "/" pattern's.
func (a *api) serveTimed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	a.mux.ServeHTTP(sw, r)
	a.meter.HTTPRequest(r.Pattern, sw.status(), time.Since(start))
}

// statusWriter remembers the status a handler wrote. Unwrap lets
// http.ResponseController reach the connection's writer (MCP's streaming
// answers flush through it); Flush serves handlers that assert
// http.Flusher.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 && code >= 200 { // 1xx are interim: the final status follows
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// status is the status the client got: 200 if the handler wrote none.
func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

// metrics serves the node's metrics (node/metrics: the registry's
// histograms, Go runtime and process collectors) and the figures read at
// each scrape (figures). It is owner-only: the figures count every
// namespace and every peer.
func (a *api) metrics(w http.ResponseWriter, r *http.Request) error {
	if err := a.requireOwner(r, "read the metrics"); err != nil {
		return err
	}
	a.meter.Handler(figures{a: a, ctx: r.Context()}).ServeHTTP(w, r)
	return nil
}

// figureDescs describe the figures a scrape reads from the service, the
// MCP sessions and the cluster.
type figureDescs struct {
	memories, deleted, sessions, evicted *prometheus.Desc
	cluster                              []clusterFigure
	peer                                 []peerFigure
}

type clusterFigure struct {
	desc *prometheus.Desc
	v    func(s clusterCounters) uint64
}

type clusterCounters struct{ applied, rejected, dropped, localOver, conflicts uint64 }

type peerFigure struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	v    func(replica.PeerStats) float64
}

func newFigureDescs() *figureDescs {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return &figureDescs{
		memories: d("mnemo_memories", "Live memories the owner can read."),
		deleted:  d("mnemo_memories_deleted", "Soft-deleted memories the owner can read."),
		sessions: d("mnemo_mcp_sessions", "Live MCP sessions on /mcp."),
		evicted:  d("mnemo_mcp_sessions_evicted_total", "MCP sessions closed to make room under the session limits."),
		cluster: []clusterFigure{
			{d("mnemo_replication_applied_total", "Peer deltas applied."), func(s clusterCounters) uint64 { return s.applied }},
			{d("mnemo_replication_rejected_total", "Peer deltas or frames rejected."), func(s clusterCounters) uint64 { return s.rejected }},
			{d("mnemo_replication_dropped_frames_total", "Frames dropped on full send queues or failed sends."), func(s clusterCounters) uint64 { return s.dropped }},
			{d("mnemo_replication_local_overflows_total", "Local deltas turned into digest syncs because the loop was behind."), func(s clusterCounters) uint64 { return s.localOver }},
			{d("mnemo_replication_binding_conflicts_total", "Claims to host an agent another node hosts, refused."), func(s clusterCounters) uint64 { return s.conflicts }},
		},
		peer: []peerFigure{
			{d("mnemo_peer_queue_depth", "Deltas waiting for the peer.", "peer"), gauge, func(p replica.PeerStats) float64 { return float64(p.QueueDeltas) }},
			{d("mnemo_peer_queue_bytes", "Bytes waiting for the peer.", "peer"), gauge, func(p replica.PeerStats) float64 { return float64(p.QueueBytes) }},
			{d("mnemo_peer_in_flight_batches", "Batches sent to the peer and not acknowledged yet.", "peer"), gauge, func(p replica.PeerStats) float64 { return float64(p.InFlight) }},
			{d("mnemo_peer_deltas_sent_total", "Deltas sent to the peer.", "peer"), counter, func(p replica.PeerStats) float64 { return float64(p.DeltasSent) }},
			{d("mnemo_peer_deltas_received_total", "Deltas received from the peer.", "peer"), counter, func(p replica.PeerStats) float64 { return float64(p.DeltasRecv) }},
			{d("mnemo_peer_rejected_total", "Deltas from the peer rejected.", "peer"), counter, func(p replica.PeerStats) float64 { return float64(p.Rejected) }},
			{d("mnemo_peer_state_errors_total", "Local store errors while syncing with the peer.", "peer"), counter, func(p replica.PeerStats) float64 { return float64(p.StateErrors) }},
			{d("mnemo_peer_fallbacks_total", "Queue overflows or ack timeouts that fell back to digest sync.", "peer"), counter, func(p replica.PeerStats) float64 { return float64(p.Fallbacks) }},
			{d("mnemo_peer_retransmits_total", "Batches sent to the peer again for want of an ack.", "peer"), counter, func(p replica.PeerStats) float64 { return float64(p.Retransmits) }},
			{d("mnemo_peer_syncs_requested_total", "Digest syncs this node asked the peer for.", "peer"), counter, func(p replica.PeerStats) float64 { return float64(p.SyncsSent) }},
			{d("mnemo_peer_sent_bytes_total", "Bytes of deltas sent to the peer, live and in sync answers (before wire compression).", "peer"), counter, func(p replica.PeerStats) float64 { return float64(p.BytesSent) }},
		},
	}
}

// figures is the collector of one scrape: it reads the service (with the
// scrape's context), the MCP sessions and the cluster's status.
type figures struct {
	a   *api
	ctx context.Context
}

func (f figures) Describe(ch chan<- *prometheus.Desc) {
	d := f.a.figureDescs
	for _, x := range []*prometheus.Desc{d.memories, d.deleted, d.sessions, d.evicted} {
		ch <- x
	}
	for _, c := range d.cluster {
		ch <- c.desc
	}
	for _, p := range d.peer {
		ch <- p.desc
	}
}

func (f figures) Collect(ch chan<- prometheus.Metric) {
	a, d := f.a, f.a.figureDescs
	st, err := a.svc.Stats(f.ctx, callerOwner(a), "")
	if err != nil {
		ch <- prometheus.NewInvalidMetric(d.memories, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(d.memories, prometheus.GaugeValue, float64(st.Memories))
	ch <- prometheus.MustNewConstMetric(d.deleted, prometheus.GaugeValue, float64(st.Deleted))
	ch <- prometheus.MustNewConstMetric(d.sessions, prometheus.GaugeValue, float64(a.mcpSessions.Sessions()))
	ch <- prometheus.MustNewConstMetric(d.evicted, prometheus.CounterValue, float64(a.mcpSessions.Evicted()))
	if a.cluster == nil {
		return
	}
	cs := a.cluster.Status(false)
	counters := clusterCounters{cs.Applied, cs.Rejected, cs.DroppedFrames, cs.LocalOverflow, cs.BindingConflicts}
	for _, c := range d.cluster {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.v(counters)))
	}
	for _, p := range cs.Peers {
		for _, g := range d.peer {
			ch <- prometheus.MustNewConstMetric(g.desc, g.kind, g.v(p), string(p.Peer))
		}
	}
}

var _ prometheus.Collector = figures{}

// meterOrNew is cfg's metrics, or a registry of the handler's own.
func meterOrNew(m *metrics.Metrics) *metrics.Metrics {
	if m == nil {
		return metrics.New()
	}
	return m
}
