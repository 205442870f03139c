package httpapi

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"

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

// callerOwner is the node's owner agent, for node-wide figures.
func callerOwner(a *api) memapi.Caller { return memapi.Caller{Principal: a.svc.Owner()} }
