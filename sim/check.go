package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/sync/replica"
)

// finalHolders are the nodes that must hold ns once the network is quiet:
// every member up whose agent may read it.
func (s *Sim) finalHolders(j int) []*simNode {
	var out []*simNode
	for i, n := range s.nodes {
		if n.up && n.member && s.read[i][j] {
			out = append(out, n)
		}
	}
	return out
}

// converged is the cheap test the quiet phase polls: every holder of each
// namespace has the same causal context as the first. Equal digests are
// checked after (check), and a difference there is a violation.
// When it is not, s.lagging says which holder lagged where (the report's
// LastToConverge: what held the quiet phase longest).
func (s *Sim) converged() bool {
	for _, p := range s.inboxPairs() {
		if a, b := p.target.svc.Store().Context(p.ns), p.writer.svc.Store().Context(p.ns); !a.Equal(b) {
			s.lagging = lagging(p.ns, p.target, a, p.writer, b)
			return false
		}
	}
	for j, ns := range s.nss {
		hs := s.finalHolders(j)
		if len(hs) == 0 {
			continue
		}
		want := hs[0].svc.Store().Context(ns)
		for _, n := range hs[1:] {
			if c := n.svc.Store().Context(ns); !c.Equal(want) {
				s.lagging = lagging(ns, n, c, hs[0], want)
				return false
			}
		}
	}
	return true
}

// lagging describes two holders of ns whose contexts differ: the dot
// ranges each lacks of the other's.
func lagging(ns string, a *simNode, ac *crdt.Context, b *simNode, bc *crdt.Context) string {
	return fmt.Sprintf("%s: %s lacks %v of %s, which lacks %v", ns, a.id, ac.Missing(bc), b.id, bc.Missing(ac))
}

// limited appends at most three of viols, then a count of the rest.
func limited(v []string, prefix string, viols []string) []string {
	v = append(v, viols[:min(3, len(viols))]...)
	if len(viols) > 3 {
		v = append(v, fmt.Sprintf("%s %d more", prefix, len(viols)-3))
	}
	return v
}

// check runs every invariant over the quiet cluster, through the nodes'
// own store and queries, and returns the violations, most fundamental
// first, and the survey of the states it read.
func (s *Sim) check() ([]string, *survey) {
	var v []string
	if s.cfg.hooks.tamper {
		s.tamperOne()
	}
	s.retracted = append(s.retracted, s.surgicalRetracts()...)
	if s.cfg.hooks.capsuleFlipped && len(s.capsules) > 0 {
		s.capsules[0].revoked = !s.capsules[0].revoked
	}
	if s.cfg.hooks.auditShrank {
		s.audits[[2]int{s.creator[0], 0}] += 1000
	}
	sv := s.surveyStates()
	v = s.checkConvergence(v, sv)
	v = s.checkAcked(v)
	v = s.checkWrites(v, sv)
	v = s.checkReads(v, sv)
	v = s.checkRetracts(v)
	v = s.checkQueries(v)
	v = s.checkCapsules(v)
	v = s.checkAudit(v)
	bound := s.cfg.Engine.QueueMaxDeltas
	if s.cfg.hooks.queueBound > 0 {
		bound = s.cfg.hooks.queueBound
	}
	if q := s.totals().maxQueue; q > bound {
		v = append(v, fmt.Sprintf("queue: depth %d over the bound %d", q, bound))
	}
	return v, sv
}

// inboxPair is an inbox namespace (capsules, projection views) and the
// nodes of its writer and its target, which must both hold it.
type inboxPair struct {
	ns             string
	writer, target *simNode
}

// inboxPairs lists the inboxes the live members write to live members.
func (s *Sim) inboxPairs() []inboxPair {
	var out []inboxPair
	for _, w := range s.nodes {
		if !w.up || !w.member {
			continue
		}
		for _, ns := range w.svc.Store().Namespaces() {
			addr, err := namespace.Parse(ns)
			if err != nil {
				continue
			}
			target, writer, ok := memory.InboxParties(addr)
			if !ok || writer != w.principal {
				continue
			}
			for _, t := range s.nodes {
				if t.principal == target && t != w && t.up && t.member {
					out = append(out, inboxPair{ns, w, t})
				}
			}
		}
	}
	return out
}

// held is what the survey found of one namespace on one node.
type held struct {
	digest crdt.Digest
	len    int
	fp     [32]byte
}

// stateFindings are what the write check found in one distinct state of
// a namespace: forged ids and records written by replicas without write.
type stateFindings struct {
	forged       []forgedOp
	unauthorized [][2]string // id, replica
}

// survey is every live node's namespaces, read once for all the checks
// that look at states. A state is decoded once per distinct fingerprint
// (store.Store.Fingerprint: equal fingerprints are equal states), so 100
// holders of one converged namespace cost one decode, not 100 (the checks
// took a quarter of a 100-node run's CPU decoding every copy several
// times).
type survey struct {
	held     []map[string]held // [node] ns → what it holds
	findings map[[32]byte]stateFindings
	none     held // a namespace not held: the empty state
}

// of is what n holds of ns (the empty state if nothing).
func (sv *survey) of(n *simNode, ns string) held {
	if h, ok := sv.held[n.idx][ns]; ok {
		return h
	}
	return sv.none
}

// surveyStates reads every live node's namespaces, checking each distinct
// state for writes without permission as it first meets it.
func (s *Sim) surveyStates() *survey {
	sv := &survey{held: make([]map[string]held, len(s.nodes)), findings: map[[32]byte]stateFindings{},
		none: held{digest: crdt.NewMap().Digest()}}
	decoded := map[[32]byte]held{}
	for i, n := range s.nodes {
		if !n.up {
			continue
		}
		sv.held[i] = map[string]held{}
		for _, ns := range n.svc.Store().Namespaces() {
			fp, err := n.svc.Store().Fingerprint(ns)
			h, ok := decoded[fp]
			if !ok || err != nil {
				m := n.state(ns)
				h = held{digest: m.Digest(), len: m.Len(), fp: fp}
				if err == nil {
					decoded[fp] = h
				}
				sv.findings[fp] = s.writeFindings(ns, m)
			}
			sv.held[i][ns] = h
		}
	}
	return sv
}

// writeFindings checks one state of ns: no forged id, and every dot held
// was written by a replica whose agent held write on ns at some point.
func (s *Sim) writeFindings(ns string, m *crdt.Map) stateFindings {
	var f stateFindings
	for _, op := range s.forged {
		if op.ns == ns && m.Entry(op.id) != nil {
			f.forged = append(f.forged, op)
		}
	}
	j, ok := s.nsIdx[ns]
	if !ok {
		return f // a node's own agent namespace, or an inbox
	}
	m.Records(func(id string, r *crdt.Record) bool {
		for _, d := range r.Dots() {
			if w, ok := s.byRep[d.Replica]; !ok || !s.everWrit[w][j] {
				f.unauthorized = append(f.unauthorized, [2]string{id, fmt.Sprint(d.Replica)})
				return false
			}
		}
		return true
	})
	return f
}

// checkConvergence: every holder of a namespace has the same state
// digest, and an inbox's target the writer's.
func (s *Sim) checkConvergence(v []string, sv *survey) []string {
	for _, p := range s.inboxPairs() {
		if a, b := sv.of(p.writer, p.ns), sv.of(p.target, p.ns); a.digest != b.digest {
			v = append(v, fmt.Sprintf("convergence: inbox %s on %s (target) has %d records, on %s (writer) %d", p.ns, p.target.id, b.len, p.writer.id, a.len))
		}
	}
	diffs := 0
	for j, ns := range s.nss {
		hs := s.finalHolders(j)
		if len(hs) == 0 {
			continue
		}
		ref := sv.of(hs[0], ns)
		for _, n := range hs[1:] {
			if m := sv.of(n, ns); m.digest != ref.digest {
				how := "" // what differs, for the first few (each decodes both states)
				if diffs++; diffs <= 3 {
					how = ": " + stateDiff(n.state(ns), hs[0].state(ns))
				}
				v = append(v, fmt.Sprintf("convergence: %s on %s has digest %.12s, on %s %.12s (%d vs %d records)%s",
					ns, n.id, m.digest, hs[0].id, ref.digest, m.len, ref.len, how))
			}
		}
	}
	return v
}

// checkAcked: no acknowledged write lost, across crashes and restarts:
// every holder has each acknowledged op's dots, and each saved memory is
// there (Get, deleted included) unless it was retracted.
func (s *Sim) checkAcked(v []string) []string {
	ctx := context.Background()
	retracted := s.retractedSet()
	holds := make([][]bool, len(s.nss)) // [ns][node]: a final holder
	for j := range s.nss {
		holds[j] = make([]bool, len(s.nodes))
		for _, n := range s.finalHolders(j) {
			holds[j][n.idx] = true
		}
	}
	// Each node checks the acknowledged ops it must hold, at once with the
	// others: the indexes of those it lacks, in order.
	missing := make([][]int, len(s.nodes))
	s.eachNode(func(n *simNode) {
		contexts := map[string]*crdt.Context{} // ns → its context, read once (a copy each time)
		for k, op := range s.acked {
			j, ok := s.nsIdx[op.ns]
			if !ok || !holds[j][n.idx] {
				continue
			}
			c := contexts[op.ns]
			if c == nil {
				c = n.svc.Store().Context(op.ns)
				contexts[op.ns] = c
			}
			ok = true
			for _, d := range op.dots {
				ok = ok && c.Contains(d)
			}
			if ok && op.id != "" && (op.kind == "save" || op.kind == "share" || op.kind == "promote") && !retracted[op.ns+" "+op.id] {
				_, err := n.svc.Get(ctx, n.me, op.id, true)
				ok = err == nil
			}
			if !ok {
				missing[n.idx] = append(missing[n.idx], k)
			}
		}
	})
	var lost []string
	next := make([]int, len(s.nodes)) // each node's cursor in missing
	for k, op := range s.acked {
		j, ok := s.nsIdx[op.ns]
		if !ok {
			continue
		}
		for i, n := range s.nodes {
			if !holds[j][i] || next[i] >= len(missing[i]) || missing[i][next[i]] != k {
				continue
			}
			next[i]++
			lost = append(lost, fmt.Sprintf("lost write: %s %s %s (t=%v) missing on %s", op.kind, op.ns, op.id, op.at, n.id))
		}
	}
	return limited(v, "lost write:", lost)
}

func (s *Sim) retractedSet() map[string]bool {
	r := map[string]bool{}
	for _, x := range s.retracted {
		r[x.ns+" "+x.id] = true
	}
	return r
}

// checkWrites: nothing written without write permission is applied
// anywhere: no forged id on any node, and every dot held was written by a
// replica whose agent held write on that namespace at some point.
func (s *Sim) checkWrites(v []string, sv *survey) []string {
	var bad []string
	for _, n := range s.nodes {
		for _, ns := range slices.Sorted(maps.Keys(sv.held[n.idx])) {
			f := sv.findings[sv.held[n.idx][ns].fp]
			for _, op := range f.forged {
				bad = append(bad, fmt.Sprintf("write: forged %s %s by %s applied on %s", op.ns, op.id, s.nodes[op.by].id, n.id))
			}
			for _, u := range f.unauthorized {
				bad = append(bad, fmt.Sprintf("write: %s on %s holds %s written by replica %v without write", ns, n.id, u[0], u[1]))
			}
		}
	}
	return limited(v, "write:", bad)
}

// checkReads: nothing was sent to a node that may not read it (checked at
// send time), and no node holds a shared namespace its agent was never
// granted read on.
func (s *Sim) checkReads(v []string, sv *survey) []string {
	bad := slices.Clone(s.sentViols)
	for _, n := range s.nodes {
		for _, ns := range slices.Sorted(maps.Keys(sv.held[n.idx])) {
			if j, ok := s.nsIdx[ns]; ok && !s.everRead[n.idx][j] && sv.held[n.idx][ns].len > 0 {
				bad = append(bad, fmt.Sprintf("read: %s holds %s, never granted to its agent", n.id, ns))
			}
		}
	}
	return limited(v, "read:", bad)
}

// checkRetracts: a retracted memory is in no answer on any node.
func (s *Sim) checkRetracts(v []string) []string {
	ctx := context.Background()
	var bad []string
	for _, r := range s.retracted {
		j := s.nsIdx[r.ns]
		for _, n := range s.nodes {
			if !n.up || !s.read[n.idx][j] {
				continue
			}
			if _, err := n.svc.Get(ctx, n.me, r.id, true); err == nil {
				bad = append(bad, fmt.Sprintf("retract: %s %s still answered by Get on %s", r.ns, r.id, n.id))
			}
		}
	}
	return limited(v, "retract:", bad)
}

// checkQueries: every node allowed to read a namespace answers the same
// to the same questions: Search (the ids matched, deleted included),
// Get (what an agent reads of a memory), Timeline (the neighbours of a
// memory) and Context (the memories it would put in a prompt). Retracted
// ids must be in no answer.
func (s *Sim) checkQueries(v []string) []string {
	ctx := context.Background()
	retracted := s.retractedSet()
	// The questions first, drawn in namespace order; then every node
	// answers those of its namespaces at once with the others; then the
	// answers are compared, in namespace and holder order.
	type quiz struct {
		ns                string
		hs                []*simNode
		questions, sample []string
		answers           []string   // by holder, in hs's order: each written by its holder only
		retracts          [][]string // the retracted memories each holder showed
	}
	type ask struct {
		q   *quiz
		pos int // the node's place in q.hs
	}
	var quizzes []*quiz
	asked := make([][]ask, len(s.nodes))
	for j, ns := range s.nss {
		hs := s.finalHolders(j)
		if len(hs) < 2 {
			continue
		}
		q := &quiz{ns: ns, hs: hs, answers: make([]string, len(hs)), retracts: make([][]string, len(hs))}
		for range 3 {
			q.questions = append(q.questions, words[s.rng.IntN(len(words))])
		}
		if ids := s.ids[j]; len(ids) > 0 {
			for range 3 {
				q.sample = append(q.sample, ids[s.rng.IntN(len(ids))])
			}
		}
		quizzes = append(quizzes, q)
		for pos, n := range hs {
			asked[n.idx] = append(asked[n.idx], ask{q, pos})
		}
	}
	answer := func(n *simNode, qz *quiz) (string, []string) {
		ns := qz.ns
		var b strings.Builder
		var bad []string
		for _, q := range qz.questions {
			r, err := n.svc.Search(ctx, n.me, memory.SearchQuery{Query: q, Filter: memory.Filter{Namespace: ns}, Limit: 100, IncludeDeleted: true})
			// Past SearchTotalExact a total is a lower bound that
			// depends on the order a node indexed its memories in.
			fmt.Fprintf(&b, "search %q: %v %d", q, err, min(r.Total, memapi.SearchTotalExact))
			var ids []string
			for _, h := range r.Results {
				ids = append(ids, h.Memory.ID)
				if retracted[ns+" "+h.Memory.ID] {
					bad = append(bad, fmt.Sprintf("retract: %s %s in a search answer on %s", ns, h.Memory.ID, n.id))
				}
			}
			slices.Sort(ids)
			fmt.Fprintf(&b, " %v\n", ids)
		}
		for _, id := range qz.sample {
			m, err := n.svc.Get(ctx, n.me, id, true)
			fmt.Fprintf(&b, "get %s: %v %q %q %v %v %s\n", id, err, m.Title, m.Content, m.Tags, m.DeletedAt != nil, m.Author)
			tl, err := n.svc.Timeline(ctx, n.me, memory.TimelineQuery{ID: id, Filter: memory.Filter{Namespace: ns}})
			fmt.Fprintf(&b, "timeline %s: %v %s |", id, err, tl.Center.ID)
			for _, m := range append(tl.Before, tl.After...) {
				b.WriteString(" " + m.ID)
			}
			b.WriteString("\n")
		}
		cr, err := n.svc.Context(ctx, n.me, memory.ContextQuery{Filter: memory.Filter{Namespace: ns}})
		fmt.Fprintf(&b, "context: %v", err)
		for _, m := range cr.Memories {
			b.WriteString(" " + m.ID)
			if retracted[ns+" "+m.ID] {
				bad = append(bad, fmt.Sprintf("retract: %s %s in a context answer on %s", ns, m.ID, n.id))
			}
		}
		return b.String(), bad
	}
	s.eachNode(func(n *simNode) {
		for _, a := range asked[n.idx] {
			a.q.answers[a.pos], a.q.retracts[a.pos] = answer(n, a.q)
		}
	})
	var bad []string
	for _, q := range quizzes {
		want := q.answers[0]
		bad = append(bad, q.retracts[0]...)
		for k, n := range q.hs[1:] {
			bad = append(bad, q.retracts[k+1]...)
			if a := q.answers[k+1]; a != want {
				bad = append(bad, fmt.Sprintf("query: %s answers differently on %s and %s:\n%s\n---\n%s", q.ns, q.hs[0].id, n.id, want, a))
			}
		}
	}
	return limited(v, "query:", bad)
}

// tamperOne gives one holder a write nobody else sees (test hook): a
// record written straight into its store, as a bug that skipped the loop
// would.
func (s *Sim) tamperOne() {
	for j, ns := range s.nss {
		for _, n := range s.finalHolders(j) {
			if !s.write[n.idx][j] {
				continue
			}
			if _, err := n.svc.Save(context.Background(), n.me, memory.SaveRequest{Namespace: ns, Type: "observation", Content: "tampered"}); err == nil {
				return
			}
		}
	}
}

// totals sums the loops' counters over every node, the incarnations lost
// in crashes included.
type totals struct {
	applied, rejected, fallbacks, retransmits uint64
	maxQueue                                  int
	trees                                     replica.TreeStats // broadcast trees' counters (trees.go)
	syncs                                     replica.SyncStats // digest syncs by cause (trees.go)
}

func (s *Sim) totals() totals {
	var t totals
	for _, n := range s.nodes {
		t.applied += n.dead.applied
		t.rejected += n.dead.rejected
		t.fallbacks += n.dead.fallbacks
		t.retransmits += n.dead.retransmits
		t.maxQueue = max(t.maxQueue, n.dead.maxQueue)
		t.trees.Add(n.dead.trees)
		t.syncs.Add(n.dead.syncs)
		if n.up {
			st := n.loop.Status(false)
			t.applied += st.Applied
			t.rejected += st.Rejected
			t.trees.Add(st.Trees)
			t.syncs.Add(st.Syncs)
			for _, p := range st.Peers {
				t.fallbacks += p.Fallbacks
				t.retransmits += p.Retransmits
				t.maxQueue = max(t.maxQueue, p.MaxQueueDepth)
			}
		}
	}
	return t
}

// finalDigest hashes every holder's per-namespace digest (from the
// survey), sorted by namespace then node.
func (s *Sim) finalDigest(sv *survey) string {
	h := sha256.New()
	for j, ns := range s.nss {
		for _, n := range s.finalHolders(j) {
			d := sv.of(n, ns).digest
			fmt.Fprintf(h, "%s %s ", ns, n.id)
			h.Write(d[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
