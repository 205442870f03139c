package sim

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory/capsule"
	"github.com/mnemohq/mnemo/node/memory/projview"
	"github.com/mnemohq/mnemo/node/memory/surgery"
	"github.com/mnemohq/mnemo/projection"
)

// The governed-memory features in the workload, through their public APIs
// on the agent's own node: edits (surgery: amend, quarantine, attenuate,
// retract; retract and amend need an admin's approval, as configured in
// features) and their decisions by the namespace's creator; capsules of a
// few memories for another agent, and their revocation; projection views
// of a shared namespace into another agent's inbox. The checkers then
// require that no revoked capsule's item and no memory retracted by an
// approved edit is in any answer on any node, and that no node's audit of
// a namespace ever shrinks (crashes included).

// simCapsule is a capsule the workload created.
type simCapsule struct {
	id       string
	creator  int
	audience int
	items    []string // the item ids, in the audience's inbox
	revoked  bool
}

// pickReadable picks an acknowledged memory id in a namespace n's agent
// may read, and the namespace's index (-1 when there is none).
func (s *Sim) pickReadable(n *simNode, write bool) (int, string) {
	var js []int
	for j := range s.nss {
		if len(s.ids[j]) > 0 && s.read[n.idx][j] && (!write || s.write[n.idx][j]) {
			js = append(js, j)
		}
	}
	if len(js) == 0 {
		return -1, ""
	}
	j := js[s.wr.IntN(len(js))]
	return j, s.ids[j][s.wr.IntN(len(s.ids[j]))]
}

// opEdit proposes an edit of a memory the agent may write.
func (s *Sim) opEdit(n *simNode) {
	j, id := s.pickReadable(n, true)
	if j < 0 {
		s.stats.skipped++
		return
	}
	req := memapi.EditRequest{TargetID: id, Reason: fmt.Sprintf("sim edit %d", s.stats.ops)}
	switch x := s.wr.IntN(4); x {
	case 0:
		req.Op = memapi.OpRetract
	case 1:
		text := s.text()
		req.Op, req.Patch.Text = memapi.OpAmend, &text
	case 2:
		req.Op = memapi.OpQuarantine
	default:
		imp := 0.1
		req.Op, req.Patch.Importance = memapi.OpAttenuate, &imp
	}
	var res memapi.EditResult
	err := s.run(n, func(ctx context.Context) error {
		var err error
		res, err = surgery.Of(n.svc).Propose(ctx, n.me, req)
		return err
	})
	if err != nil {
		s.tracef("op edit %s %s on %s refused: %v", req.Op, id, n.id, err)
		s.stats.skipped++
		return
	}
	s.stats.edits++
	s.acknowledge(n, "edit", s.nss[j], "")
	s.tracef("op edit %s %s → %s %s", req.Op, id, res.EditID, res.Status)
	s.sampleAudit(n, j)
}

// opDecide has a namespace's creator approve (mostly) or reject one of
// its pending edits.
func (s *Sim) opDecide() {
	j := s.wr.IntN(len(s.nss))
	c := s.nodes[s.creator[j]]
	if !c.up {
		s.stats.skipped++
		return
	}
	a, err := surgery.Of(c.svc).Audit(context.Background(), c.me, memapi.AuditQuery{Namespace: s.nss[j], Status: memapi.StatusPending})
	if err != nil || len(a.Edits) == 0 {
		s.stats.skipped++
		return
	}
	e := a.Edits[s.wr.IntN(len(a.Edits))]
	approve := s.wr.IntN(10) < 7
	err = s.run(c, func(ctx context.Context) error {
		_, err := surgery.Of(c.svc).Decide(ctx, c.me, e.EditID, approve)
		return err
	})
	if err != nil {
		s.tracef("op decide %s on %s refused: %v", e.EditID, c.id, err)
		s.stats.skipped++
		return
	}
	s.stats.decisions++
	s.acknowledge(c, "decide", s.nss[j], "")
	s.tracef("op decide %s approve=%v on %s", e.EditID, approve, c.id)
	s.sampleAudit(c, j)
}

// opCapsule has an agent put a few memories it may read in a capsule for
// another agent.
func (s *Sim) opCapsule(n *simNode) {
	var ids []string
	for range 1 + s.wr.IntN(3) {
		if j, id := s.pickReadable(n, false); j >= 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	a := s.wr.IntN(len(s.nodes))
	if len(ids) == 0 || a == n.idx {
		s.stats.skipped++
		return
	}
	var created memapi.CapsuleCreated
	err := s.run(n, func(ctx context.Context) error {
		var err error
		created, err = capsule.Of(n.svc).Create(ctx, n.me, memapi.CapsuleRequest{SubjectType: "project", SubjectID: "sim",
			Audience: []string{s.nodes[a].principal.String()}, IDs: ids})
		return err
	})
	if err != nil {
		s.tracef("op capsule on %s refused: %v", n.id, err)
		s.stats.skipped++
		return
	}
	got, err := capsule.Of(n.svc).Get(context.Background(), n.me, created.CapsuleID)
	if err != nil {
		s.violate("capsule: %s cannot read back its capsule %s: %v", n.id, created.CapsuleID, err)
		return
	}
	c := simCapsule{id: created.CapsuleID, creator: n.idx, audience: a}
	for _, m := range got.Items {
		c.items = append(c.items, m.ID)
	}
	s.capsules = append(s.capsules, c)
	s.stats.capsules++
	s.acknowledge(n, "capsule", "", "")
	s.tracef("op capsule %s of %d items for %s on %s", c.id, len(c.items), s.nodes[a].id, n.id)
}

// opRevokeCapsule has a capsule's creator revoke it.
func (s *Sim) opRevokeCapsule() {
	var live []int
	for i, c := range s.capsules {
		if !c.revoked && s.nodes[c.creator].up {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		s.stats.skipped++
		return
	}
	c := &s.capsules[live[s.wr.IntN(len(live))]]
	n := s.nodes[c.creator]
	err := s.run(n, func(ctx context.Context) error {
		_, err := capsule.Of(n.svc).Revoke(ctx, n.me, c.id)
		return err
	})
	if err != nil {
		s.tracef("op revoke capsule %s on %s refused: %v", c.id, n.id, err)
		s.stats.skipped++
		return
	}
	c.revoked = true
	s.stats.capsuleRevokes++
	s.tracef("op revoke capsule %s on %s", c.id, n.id)
}

// opProjection has an agent that reads a shared namespace project it, at
// a random level, into another agent's inbox.
func (s *Sim) opProjection(n *simNode) {
	j, _ := s.pickReadable(n, false)
	a := s.wr.IntN(len(s.nodes))
	if j < 0 || a == n.idx {
		s.stats.skipped++
		return
	}
	levels := []projection.Level{projection.L1, projection.L2, projection.L3}
	live := s.wr.IntN(2) == 0
	err := s.run(n, func(ctx context.Context) error {
		_, err := projview.Of(n.svc).Create(ctx, n.me, memapi.ProjectionRequest{Source: s.nss[j], Target: s.nodes[a].principal.String(),
			Filter: projection.Filter{Tags: []string{s.tag()}}, Level: levels[s.wr.IntN(len(levels))], Live: &live})
		return err
	})
	if err != nil {
		s.tracef("op projection %s → %s on %s refused: %v", s.nss[j], s.nodes[a].id, n.id, err)
		s.stats.skipped++
		return
	}
	s.stats.projections++
	s.tracef("op projection %s → %s on %s", s.nss[j], s.nodes[a].id, n.id)
}

// sampleAudit records how many audit entries n shows for namespace j; the
// checker requires the count never to go down on that node.
func (s *Sim) sampleAudit(n *simNode, j int) {
	a, err := surgery.Of(n.svc).Audit(context.Background(), n.me, memapi.AuditQuery{Namespace: s.nss[j]})
	if err != nil {
		return
	}
	k := [2]int{n.idx, j}
	s.audits[k] = max(s.audits[k], len(a.Edits))
}

// checkCapsules: a revoked capsule's items are in no answer on its
// creator's or its audience's node (Get, the capsule's own Get); a live
// capsule shows its audience the same items it shows its creator (edits
// may hide some, on both).
func (s *Sim) checkCapsules(v []string) []string {
	ctx := context.Background()
	var bad []string
	itemIDs := func(c memapi.Capsule) []string {
		var ids []string
		for _, m := range c.Items {
			ids = append(ids, m.ID)
		}
		slices.Sort(ids)
		return ids
	}
	for _, c := range s.capsules {
		cr, au := s.nodes[c.creator], s.nodes[c.audience]
		if !c.revoked {
			if !cr.up || !au.up || !au.member {
				continue
			}
			want, err1 := capsule.Of(cr.svc).Get(ctx, cr.me, c.id)
			got, err2 := capsule.Of(au.svc).Get(ctx, au.me, c.id)
			if err1 != nil || err2 != nil || !slices.Equal(itemIDs(want), itemIDs(got)) {
				bad = append(bad, fmt.Sprintf("capsule: live %s shows items %v on its audience %s, %v on its creator %s (%v, %v)",
					c.id, itemIDs(got), au.id, itemIDs(want), cr.id, err2, err1))
			}
			continue
		}
		for _, n := range []*simNode{cr, au} {
			if !n.up {
				continue
			}
			if got, err := capsule.Of(n.svc).Get(ctx, n.me, c.id); err == nil && len(got.Items) > 0 {
				bad = append(bad, fmt.Sprintf("capsule: revoked %s still shows %d items on %s", c.id, len(got.Items), n.id))
			}
			for _, id := range c.items {
				if _, err := n.svc.Get(ctx, n.me, id, true); err == nil {
					bad = append(bad, fmt.Sprintf("capsule: item %s of revoked %s answered by Get on %s", id, c.id, n.id))
				}
			}
		}
	}
	return limited(v, "capsule:", bad)
}

// surgicalRetracts are the memories retracted by approved edits, as each
// namespace's creator's node audits them.
func (s *Sim) surgicalRetracts() []retraction {
	var out []retraction
	for j, ns := range s.nss {
		c := s.nodes[s.creator[j]]
		if !c.up {
			continue
		}
		a, err := surgery.Of(c.svc).Audit(context.Background(), c.me, memapi.AuditQuery{Namespace: ns, Status: memapi.StatusApproved})
		if err != nil {
			continue
		}
		for _, e := range a.Edits {
			if e.Op == memapi.OpRetract && e.Namespace == ns {
				out = append(out, retraction{ns: ns, id: e.TargetID})
			}
		}
	}
	return out
}

// checkAudit: no node's audit of a namespace shows fewer entries than it
// did before (crashes and restarts included).
func (s *Sim) checkAudit(v []string) []string {
	var bad []string
	for _, k := range slices.SortedFunc(maps.Keys(s.audits), func(a, b [2]int) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	}) {
		n, j := s.nodes[k[0]], k[1]
		if !n.up || !s.read[n.idx][j] {
			continue
		}
		a, err := surgery.Of(n.svc).Audit(context.Background(), n.me, memapi.AuditQuery{Namespace: s.nss[j]})
		if err != nil || len(a.Edits) < s.audits[k] {
			bad = append(bad, fmt.Sprintf("audit: %s shows %d entries of %s, had shown %d (%v)", n.id, len(a.Edits), s.nss[j], s.audits[k], err))
		}
	}
	return limited(v, "audit:", bad)
}
