package httpapi

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/cluster"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/sync/replica"
)

// ClusterView is what the membership, status, sync and metrics endpoints
// read; *cluster.Cluster implements it. A node without replication leaves
// Config.Cluster nil and those endpoints describe the node alone.
type ClusterView interface {
	Members() []cluster.Member
	Status(digests bool) cluster.Status
	Sync(peer string) error
}

var _ ClusterView = (*cluster.Cluster)(nil)

// Handovers is the optional capability of a ClusterView that moves an agent
// this node hosts to another node (POST /v1/handover).
type Handovers interface {
	Handover(p namespace.Address, to ed25519.PublicKey) (acl.Binding, error)
}

var _ Handovers = (*cluster.Cluster)(nil)

// HandoverRequest is the body of POST /v1/handover.
type HandoverRequest struct {
	Principal string `json:"principal"` // agent://NAME, hosted by this node
	To        string `json:"to"`        // the new host's key, as `mnemo members` shows it
}

// HandoverAnswer describes the signed hand-over.
type HandoverAnswer struct {
	Principal string `json:"principal"`
	From      string `json:"from_node"`
	To        string `json:"to_node"`
}

// handover is owner-only: it moves an agent to another node for good.
func (a *api) handover(w http.ResponseWriter, r *http.Request) error {
	var req HandoverRequest
	if err := decodeJSON(w, r, a.maxBody, &req, false); err != nil {
		return err
	}
	if err := a.requireOwner(r, "hand an agent over to another node"); err != nil {
		return err
	}
	h, ok := a.cluster.(Handovers)
	if !ok {
		return &apiError{http.StatusNotImplemented, "not_implemented", "this node does not replicate: there is no other node to hand an agent over to"}
	}
	p, err := namespace.ParsePrincipal(req.Principal)
	if err != nil {
		return badRequest("principal: %v", err)
	}
	to, err := acl.ParsePublicKey(req.To)
	if err != nil {
		return badRequest("to: %v", err)
	}
	b, err := h.Handover(p, to)
	switch {
	case errors.Is(err, cluster.ErrNotHosted):
		return fmt.Errorf("%w: %v", memapi.ErrConflict, err)
	case errors.Is(err, acl.ErrInvalid):
		return badRequest("%v", err)
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, HandoverAnswer{Principal: p.String(), From: string(acl.NodeIDOf(b.From)), To: string(acl.NodeIDOf(b.Key))})
	return nil
}

type syncRequest struct {
	Peer string `json:"peer,omitempty"` // node id; "" = every peer
}

func (a *api) clusterRoutes() []struct {
	method, path string
	h            handlerFunc
} {
	return []struct {
		method, path string
		h            handlerFunc
	}{
		{"GET", "/v1/members", a.members},
		{"GET", "/v1/status", a.status},
		{"POST", "/v1/sync", a.syncNow},
		{"POST", "/v1/handover", a.handover},
	}
}

// members answers any token: it names the nodes and the agents they host,
// which a principal needs to choose whom to grant or share with and which
// every member's gossip carries anyway; it names no team or project
// namespace and nothing of what is in one.
func (a *api) members(w http.ResponseWriter, r *http.Request) error {
	if _, err := newParams(r); err != nil {
		return err
	}
	ms := []cluster.Member{{NodeID: a.nodeID, Agents: []string{a.svc.Owner().String()}, State: "alive", Self: true}}
	if a.cluster != nil {
		ms = a.cluster.Members()
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": ms})
	return nil
}

// status is owner-only in both forms: the namespace list and the per-peer
// counters describe traffic in every namespace the node holds, including
// those a principal may not read, and ?digests=true scans them all.
func (a *api) status(w http.ResponseWriter, r *http.Request) error {
	p, err := newParams(r, "digests")
	if err != nil {
		return err
	}
	digests := p.boolean("digests")
	if p.err != nil {
		return p.err
	}
	if err := a.requireOwner(r, "read the replication status"); err != nil {
		return err
	}
	st := cluster.Status{NodeID: a.nodeID, Peers: []replica.PeerStats{}}
	if a.cluster != nil {
		st = a.cluster.Status(digests)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (a *api) syncNow(w http.ResponseWriter, r *http.Request) error {
	var req syncRequest
	if err := decodeJSON(w, r, a.maxBody, &req, true); err != nil {
		return err
	}
	if err := a.requireOwner(r, "start a sync (it covers every namespace)"); err != nil {
		return err
	}
	if a.cluster == nil {
		return &apiError{http.StatusConflict, "conflict", "replication is not enabled on this node (start it with --gossip/--join)"}
	}
	if err := a.cluster.Sync(req.Peer); err != nil {
		return badRequest("sync: %v", err)
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"requested": true, "peer": req.Peer})
	return nil
}

// metrics writes Prometheus text exposition format (version 0.0.4). It is
// owner-only: the figures count every namespace and every peer.
func (a *api) metrics(w http.ResponseWriter, r *http.Request) error {
	if err := a.requireOwner(r, "read the metrics"); err != nil {
		return err
	}
	var b strings.Builder
	metric := func(name, kind, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
	}
	st, err := a.svc.Stats(r.Context(), callerOwner(a), "")
	if err != nil {
		return err
	}
	metric("mnemo_memories", "gauge", "Live memories the owner can read.")
	fmt.Fprintf(&b, "mnemo_memories %d\n", st.Memories)
	metric("mnemo_memories_deleted", "gauge", "Soft-deleted memories the owner can read.")
	fmt.Fprintf(&b, "mnemo_memories_deleted %d\n", st.Deleted)
	metric("mnemo_mcp_sessions", "gauge", "Live MCP sessions on /mcp.")
	fmt.Fprintf(&b, "mnemo_mcp_sessions %d\n", a.mcpSessions.Sessions())
	metric("mnemo_mcp_sessions_evicted_total", "counter", "MCP sessions closed to make room under the session limits.")
	fmt.Fprintf(&b, "mnemo_mcp_sessions_evicted_total %d\n", a.mcpSessions.Evicted())
	if a.cluster != nil {
		cs := a.cluster.Status(false)
		for _, c := range []struct {
			name, help string
			v          uint64
		}{
			{"mnemo_replication_applied_total", "Peer deltas applied.", cs.Applied},
			{"mnemo_replication_rejected_total", "Peer deltas or frames rejected.", cs.Rejected},
			{"mnemo_replication_dropped_frames_total", "Frames dropped on full send queues or failed sends.", cs.DroppedFrames},
			{"mnemo_replication_local_overflows_total", "Local deltas turned into digest syncs because the loop was behind.", cs.LocalOverflow},
			{"mnemo_replication_binding_conflicts_total", "Claims to host an agent another node hosts, refused.", cs.BindingConflicts},
		} {
			metric(c.name, "counter", c.help)
			fmt.Fprintf(&b, "%s %d\n", c.name, c.v)
		}
		peers := cs.Peers
		sort.Slice(peers, func(i, j int) bool { return peers[i].Peer < peers[j].Peer })
		for _, g := range []struct {
			name, kind, help string
			v                func(replica.PeerStats) uint64
		}{
			{"mnemo_peer_queue_depth", "gauge", "Deltas waiting for the peer.", func(p replica.PeerStats) uint64 { return uint64(p.QueueDeltas) }},
			{"mnemo_peer_queue_bytes", "gauge", "Bytes waiting for the peer.", func(p replica.PeerStats) uint64 { return uint64(p.QueueBytes) }},
			{"mnemo_peer_deltas_sent_total", "counter", "Deltas sent to the peer.", func(p replica.PeerStats) uint64 { return p.DeltasSent }},
			{"mnemo_peer_deltas_received_total", "counter", "Deltas received from the peer.", func(p replica.PeerStats) uint64 { return p.DeltasRecv }},
			{"mnemo_peer_rejected_total", "counter", "Deltas from the peer rejected.", func(p replica.PeerStats) uint64 { return p.Rejected }},
			{"mnemo_peer_state_errors_total", "counter", "Local store errors while syncing with the peer.", func(p replica.PeerStats) uint64 { return p.StateErrors }},
			{"mnemo_peer_fallbacks_total", "counter", "Queue overflows or ack timeouts that fell back to digest sync.", func(p replica.PeerStats) uint64 { return p.Fallbacks }},
			{"mnemo_peer_retransmits_total", "counter", "Batches sent to the peer again for want of an ack.", func(p replica.PeerStats) uint64 { return p.Retransmits }},
		} {
			metric(g.name, g.kind, g.help)
			for _, p := range peers {
				fmt.Fprintf(&b, "%s{peer=%q} %d\n", g.name, string(p.Peer), g.v(p))
			}
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(b.String()))
	return nil
}

// callerOwner is the node's owner agent, for node-wide figures.
func callerOwner(a *api) memapi.Caller { return memapi.Caller{Principal: a.svc.Owner()} }
