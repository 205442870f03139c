package sim

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/sync/replica"
)

// nodePolicy is what one engine asks. Decisions come from the cluster's
// acl.Policy, evaluated from real signed records; every node sees the same
// record set at the same instant (grant records are not replicated through
// the engine in the simulation: see doc.go).
type nodePolicy struct {
	s *Sim
	n *simNode
}

var _ replica.Policy = (*nodePolicy)(nil)

func (p *nodePolicy) ShouldHold(ns string) bool {
	j, ok := p.s.nsIdx[ns]
	return ok && p.s.read[p.n.idx][j]
}

func (p *nodePolicy) PeerMayRead(peer replica.Peer, ns string) bool {
	if p.s.cfg.hooks.openRead {
		return true
	}
	i, ok := p.s.byID[peer.ID]
	j, ok2 := p.s.nsIdx[ns]
	return ok && ok2 && p.s.read[i][j]
}

func (p *nodePolicy) ReplicaMayWrite(r crdt.ReplicaID, ns string) bool {
	if p.s.cfg.hooks.openWrite {
		return true
	}
	i, ok := p.s.byRep[r]
	j, ok2 := p.s.nsIdx[ns]
	return ok && ok2 && p.s.write[i][j]
}

func (s *Sim) keyOf(p namespace.Address) (ed25519.PublicKey, bool) {
	if p.Kind != namespace.KindAgent || p.Path != "" || !strings.HasPrefix(p.Name, "a") {
		return nil, false
	}
	var i int
	if _, err := fmt.Sscanf(p.Name, "a%d", &i); err != nil || i < 0 || i >= len(s.nodes) || s.nodes[i].principal != p {
		return nil, false
	}
	return s.nodes[i].ident.Public, true
}

func (s *Sim) ts() crdt.Timestamp { return crdt.MakeTimestamp(s.wall().UnixMilli(), 0) }

// initACL creates every namespace (its creator on a random node) and grants
// members (read+write) and readers at random.
func (s *Sim) initACL() error {
	s.book = acl.NewBook(s.keyOf)
	s.creator = make([]int, len(s.nss))
	for j, ns := range s.nss {
		c := s.rng.IntN(len(s.nodes))
		s.creator[j] = c
		addr := namespace.MustParse(ns)
		if err := s.addRecord(acl.NewCreate(s.nodes[c].ident, s.nodes[c].principal, addr, s.ts())); err != nil {
			return err
		}
		for i, n := range s.nodes {
			if i == c {
				continue
			}
			var perms []acl.Permission
			switch x := s.rng.Float64(); {
			case x < 0.45:
				perms = acl.Member()
			case x < 0.7 && addr.Kind == namespace.KindTeam:
				perms = []acl.Permission{acl.Read}
			}
			if perms == nil {
				continue
			}
			if err := s.addRecord(acl.NewGrant(s.nodes[c].ident, s.nodes[c].principal, addr, n.principal, perms, nil, s.ts())); err != nil {
				return err
			}
		}
	}
	s.read = make([][]bool, len(s.nodes))
	s.write = make([][]bool, len(s.nodes))
	s.everWrit = make([][]bool, len(s.nodes))
	for i := range s.nodes {
		s.read[i] = make([]bool, len(s.nss))
		s.write[i] = make([]bool, len(s.nss))
		s.everWrit[i] = make([]bool, len(s.nss))
	}
	s.evalPolicy()
	return nil
}

func (s *Sim) addRecord(r acl.SignedRecord, err error) error {
	if err != nil {
		return err
	}
	if s.policy != nil {
		if err := s.policy.Verify(r); err != nil {
			return err
		}
	}
	return s.book.AddRecord(r)
}

// evalPolicy rebuilds the decision table and returns the (node, ns) pairs
// that gained read.
func (s *Sim) evalPolicy() (gained [][2]int) {
	s.policy = s.book.Policy()
	for i, n := range s.nodes {
		for j, ns := range s.nss {
			addr := namespace.MustParse(ns)
			r := s.policy.Allowed(n.principal, addr, acl.Read)
			w := s.policy.Allowed(n.principal, addr, acl.Write)
			if r && !s.read[i][j] {
				gained = append(gained, [2]int{i, j})
			}
			s.read[i][j], s.write[i][j] = r, w
			s.everWrit[i][j] = s.everWrit[i][j] || w
		}
	}
	return gained
}

// changeACL adds a record and tells the nodes that now hold a namespace to
// create it and ask a holder for catch-up, as the node does on a grant.
func (s *Sim) changeACL(r acl.SignedRecord, err error) bool {
	if err := s.addRecord(r, err); err != nil {
		s.tracef("acl record refused: %v", err)
		return false
	}
	for _, g := range s.evalPolicy() {
		n, ns := s.nodes[g[0]], s.nss[g[1]]
		n.st.Map(ns)
		if !n.up || !n.member {
			continue
		}
		if p := s.pickHolder(g[1], n.idx); p >= 0 {
			_ = n.eng.RequestSync(s.nodes[p].id, ns)
			s.drain(n)
		}
	}
	return true
}

func (s *Sim) pickHolder(j, except int) int {
	var c []int
	for i, n := range s.nodes {
		if i != except && n.member && s.read[i][j] {
			c = append(c, i)
		}
	}
	if len(c) == 0 {
		return -1
	}
	return c[s.rng.IntN(len(c))]
}

type ackedOp struct {
	ns      string
	id      string
	kind    string
	dots    []crdt.Dot
	retract bool
	at      time.Duration
}

type forgedOp struct {
	ns, id string
	by     int
}

// op runs one workload operation chosen from the seed.
func (s *Sim) op() {
	s.stats.ops++
	x := s.rng.Float64()
	switch {
	case x < 0.04:
		s.opGrant()
		return
	case x < 0.07:
		s.opRevoke()
		return
	case x < 0.11:
		s.opForge()
		return
	}
	n := s.pickLive()
	if n == nil {
		s.stats.skipped++
		return
	}
	var nsw []int
	for j := range s.nss {
		if s.write[n.idx][j] {
			nsw = append(nsw, j)
		}
	}
	if len(nsw) == 0 {
		s.stats.skipped++
		return
	}
	ns := s.nss[nsw[s.rng.IntN(len(nsw))]]
	m := n.st.Map(ns)
	ids := m.IDs()
	kind := "save"
	switch y := s.rng.Float64(); {
	case len(ids) == 0 || y < 0.35:
	case y < 0.65:
		kind = "update"
	case y < 0.75:
		kind = "delete"
	case y < 0.93:
		kind = "tags"
	default:
		kind = "retract"
	}
	id := fmt.Sprintf("m%d", s.stats.ops)
	if kind != "save" {
		id = ids[s.rng.IntN(len(ids))]
	}
	var d *crdt.Map
	if kind == "retract" {
		d = crdt.RetractDelta(m.Entry(id), id)
		s.stats.retracts++
	} else {
		e, err := m.Edit(n.rep, id, crdt.DefaultLimits())
		if err != nil {
			s.stats.skipped++
			return
		}
		ts := n.clock.Now(s.wall())
		v := []byte(fmt.Sprintf("%s by %s at %v", kind, n.id, s.now))
		switch kind {
		case "save":
			s.stats.saves++
			err = firstErr(e.Set(ts, schema.FieldTitle, v), e.Set(ts, schema.FieldContent, v), e.Set(ts, schema.FieldType, []byte("observation")), e.Add(schema.SetTags, fmt.Sprintf("t%d", s.rng.IntN(5))))
		case "update":
			s.stats.updates++
			err = e.Set(ts, schema.FieldContent, v)
		case "delete":
			s.stats.deletes++
			err = e.Set(ts, schema.FieldDeletedAt, schema.EncodeTime(s.wall()))
		case "tags":
			s.stats.tagOps++
			tag := fmt.Sprintf("t%d", s.rng.IntN(5))
			switch r, _ := m.Get(id); {
			case r != nil && r.HasElement(schema.SetTags, tag) && s.cfg.NoSetRemoves:
				err = fmt.Errorf("tag %s present and removes are off", tag) // a re-add would cover the old dot too
			case r != nil && r.HasElement(schema.SetTags, tag):
				e.Remove(schema.SetTags, tag)
			default:
				err = e.Add(schema.SetTags, tag)
			}
		}
		if err == nil {
			err = schema.Touch(e, ts, s.wall()) // every edit writes updated_at
		}
		if err != nil {
			s.tracef("op %s %s %s on %s failed: %v", kind, ns, id, n.id, err)
			s.stats.skipped++
			return
		}
		d = e.Delta()
		d.Seal(ns, n.signer())
	}
	s.tracef("op %s %s %s on %s", kind, ns, id, n.id)
	s.ref[ns].Join(d)
	s.recordAck(n, ns, id, kind, d)
	if (s.cfg.hooks.dropAcked && kind == "save" && s.stats.saves == 1) || (s.cfg.hooks.lostRetract && kind == "retract") {
		return // test hooks: acknowledged, then neither persisted nor sent
	}
	n.st.Apply(replica.Apply{Namespace: ns, Delta: d})
	n.dirty[ns] = true
	s.stats.minDeltaBytes += uint64(len(d.Encode())) * uint64(s.holders(s.nsIdx[ns], n.idx))
	if s.cfg.measureState {
		s.stats.stateBytes += uint64(len(m.Encode())) * uint64(s.holders(s.nsIdx[ns], n.idx))
	}
	n.eng.LocalDelta(ns, d)
	s.drain(n)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (s *Sim) recordAck(n *simNode, ns, id, kind string, d *crdt.Map) {
	op := ackedOp{ns: ns, id: id, kind: kind, retract: kind == "retract", at: s.now}
	d.Records(func(_ string, r *crdt.Record) bool {
		op.dots = append(op.dots, r.Dots()...)
		return true
	})
	s.acked = append(s.acked, op)
	if kind != "retract" && len(op.dots) > 0 {
		s.maybeTrack(n, ns, op.dots[0])
	}
}

// holders counts the members other than self that should receive ns now.
func (s *Sim) holders(j, self int) int {
	c := 0
	for i, n := range s.nodes {
		if i != self && n.member && s.read[i][j] {
			c++
		}
	}
	return c
}

func (s *Sim) pickLive() *simNode {
	var c []*simNode
	for _, n := range s.nodes {
		if n.up && n.member {
			c = append(c, n)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[s.rng.IntN(len(c))]
}

// opGrant grants read (team only) or membership to a principal lacking it.
func (s *Sim) opGrant() {
	j := s.rng.IntN(len(s.nss))
	addr := namespace.MustParse(s.nss[j])
	var cand []int
	for i := range s.nodes {
		if !s.write[i][j] && !s.forgers[[2]int{i, j}] {
			cand = append(cand, i)
		}
	}
	if len(cand) == 0 {
		s.stats.skipped++
		return
	}
	i := cand[s.rng.IntN(len(cand))]
	perms := acl.Member()
	if addr.Kind == namespace.KindTeam && !s.read[i][j] && s.rng.IntN(2) == 0 {
		perms = []acl.Permission{acl.Read}
	}
	c := s.nodes[s.creator[j]]
	after := s.book.Revocations(addr, s.nodes[i].principal, perms)
	if s.changeACL(acl.NewGrant(c.ident, c.principal, addr, s.nodes[i].principal, perms, after, s.ts())) {
		s.stats.grants++
		s.tracef("grant %s %s to %s", acl.FormatPermissions(perms), s.nss[j], s.nodes[i].id)
	}
}

// opRevoke revokes read from a reader of a team namespace that may not
// write it. Write is never revoked: see doc.go.
func (s *Sim) opRevoke() {
	var cand [][2]int
	for j, ns := range s.nss {
		if !strings.HasPrefix(ns, "team://") {
			continue
		}
		for i := range s.nodes {
			if s.read[i][j] && !s.everWrit[i][j] && i != s.creator[j] {
				cand = append(cand, [2]int{i, j})
			}
		}
	}
	if len(cand) == 0 {
		s.stats.skipped++
		return
	}
	p := cand[s.rng.IntN(len(cand))]
	i, j := p[0], p[1]
	addr := namespace.MustParse(s.nss[j])
	c := s.nodes[s.creator[j]]
	if s.changeACL(acl.NewRevoke(c.ident, c.principal, addr, s.nodes[i].principal, []acl.Permission{acl.Read}, s.ts())) {
		s.stats.revokes++
		s.tracef("revoke read %s from %s", s.nss[j], s.nodes[i].id)
	}
}

// opForge has a node without write on a namespace it holds send a write
// anyway (as a buggy or hostile node would). It is never applied locally
// and never acknowledged; every receiver must reject it.
func (s *Sim) opForge() {
	var cand [][2]int
	for i, n := range s.nodes {
		if !n.up || !n.member {
			continue
		}
		for j := range s.nss {
			if s.read[i][j] && !s.everWrit[i][j] {
				cand = append(cand, [2]int{i, j})
			}
		}
	}
	if len(cand) == 0 {
		s.stats.skipped++
		return
	}
	p := cand[s.rng.IntN(len(cand))]
	n, ns := s.nodes[p[0]], s.nss[p[1]]
	if s.attack(n, p[1]) { // attack.go: the rest of a hostile member's repertoire
		return
	}
	m := n.st.Map(ns).Clone()
	id := fmt.Sprintf("forged%d", s.stats.ops)
	e, err := m.Edit(n.rep, id, crdt.DefaultLimits())
	if err != nil {
		s.stats.skipped++
		return
	}
	ts := n.clock.Now(s.wall())
	if err := firstErr(e.Set(ts, schema.FieldTitle, []byte("forged")), schema.Touch(e, ts, s.wall())); err != nil {
		s.stats.skipped++
		return
	}
	d := e.Delta()
	d.Seal(ns, n.signer()) // its own, genuine seal: the write is refused for want of permission
	s.forged = append(s.forged, forgedOp{ns: ns, id: id, by: n.idx})
	s.forgers[[2]int{n.idx, p[1]}] = true // never granted write there, so the forgery stays unauthorised
	s.stats.forgedN++
	s.tracef("forge %s %s on %s", ns, id, n.id)
	n.eng.LocalDelta(ns, d)
	s.drain(n)
}

// sortedKeys returns m's keys in order, for deterministic iteration.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
