package replica

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/sync/wire"
)

// TestScenarios runs testdata/*.txt with datadriven: engines over MemStates,
// driven the way doc.go's loop says, over a network whose every message is
// delivered, dropped or left waiting by the script. `go test -run
// TestScenarios -rewrite` regenerates the outputs. Commands:
//
//	node NAME [write=NS|(NS,…)] [read=NS|(NS,…)] [window=N] [queue=N] [ack=DUR] [ae=DUR] [rtx=N]
//	                          a node, its keys derived from its position; it
//	                          holds and may read what it may write or read
//	members                   every node learns every other (SetPeers)
//	write NODE NS ID FIELD VALUE
//	                          a local edit (and updated_at) handed to LocalDelta
//	deliver FROM->TO [n=N]    step TO with what FROM sent it (the first N)
//	drop FROM->TO             lose what FROM sent TO
//	tick NODE|all @MS         the clock at MS after time 0; Tick the node(s)
//	stabilize [rounds=N]      deliver everything until quiet (default 20 rounds)
//	refuse NODE               NODE's driver refuses the next delta it applies
//	show NODE                 its state, its held deltas and its peers' counters
//	digests                   which nodes have equal state, per namespace
//	network                   the messages waiting, per pair
//
// After every input the node's Ready is drained as the node does: apply (or
// refuse), Advance, send; each line says what happened.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, file string) {
		w := &scWorld{t: t, codec: wire.NewCodec(0), net: map[scPair][]scFrame{}, now: scEpoch}
		datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
			out, err := w.run(d)
			if err != nil {
				t.Fatalf("%s: %s: %v", d.Pos, d.FullCmd(), err)
			}
			return strings.TrimRight(out.String(), "\n")
		})
	})
}

// scEpoch is time 0 of every scenario.
var scEpoch = time.Unix(1_800_000_000, 0)

var errScenarioRefusal = errors.New("scenario: refused by the driver")

type scWorld struct {
	t     *testing.T
	codec *wire.Codec
	nodes []*scNode
	net   map[scPair][]scFrame // FIFO per direction
	now   time.Time
}

type scPair struct{ from, to PeerID }

type scFrame struct {
	frame []byte
	desc  string
}

type scNode struct {
	w      *scWorld
	i      int
	id     PeerID
	rep    crdt.ReplicaID
	signer crdt.Signer
	read   map[string]bool
	write  map[string]bool
	st     *MemState
	eng    *Engine
	clock  *crdt.Clock
	refuse bool
}

// scPolicy is one node's view of the scenario's permissions.
type scPolicy struct {
	w    *scWorld
	self *scNode
}

func (p scPolicy) ShouldHold(ns string) bool { return p.self.mayRead(ns) }

func (p scPolicy) PeerMayRead(peer Peer, ns string) bool {
	n := p.w.byID(peer.ID)
	return n != nil && n.mayRead(ns)
}

func (p scPolicy) ReplicaMayWrite(r crdt.ReplicaID, ns string) bool {
	for _, n := range p.w.nodes {
		if n.rep == r {
			return n.write[ns]
		}
	}
	return false
}

func (n *scNode) mayRead(ns string) bool { return n.read[ns] || n.write[ns] }

func (w *scWorld) byID(id PeerID) *scNode {
	for _, n := range w.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

func (w *scWorld) node(name string) (*scNode, error) {
	if n := w.byID(PeerID(name)); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("no node %q", name)
}

func (w *scWorld) pair(s string) (a, b *scNode, err error) {
	from, to, ok := strings.Cut(s, "->")
	if !ok {
		return nil, nil, fmt.Errorf("want FROM->TO, got %q", s)
	}
	if a, err = w.node(from); err != nil {
		return nil, nil, err
	}
	b, err = w.node(to)
	return a, b, err
}

func (w *scWorld) run(d *datadriven.TestData) (*strings.Builder, error) {
	var out strings.Builder
	var pos []string
	args := map[string][]string{}
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			pos = append(pos, a.Key)
		} else {
			args[a.Key] = a.Vals
		}
	}
	switch d.Cmd {
	case "node":
		return &out, w.newNode(pos, args)
	case "members":
		var peers []Peer
		for _, n := range w.nodes {
			peers = append(peers, testPeer(n.id, n.i))
		}
		for _, n := range w.nodes {
			n.eng.Tick(w.now) // the engine's time starts here, not at the zero time
			n.eng.SetPeers(peers)
			n.drain(&out)
		}
	case "write":
		if len(pos) != 5 {
			return nil, errors.New("want NODE NS ID FIELD VALUE")
		}
		n, err := w.node(pos[0])
		if err != nil {
			return nil, err
		}
		if err := n.localWrite(pos[1], pos[2], pos[3], pos[4]); err != nil {
			return nil, err
		}
		n.drain(&out)
	case "deliver", "drop":
		if len(pos) != 1 {
			return nil, errors.New("want FROM->TO")
		}
		a, b, err := w.pair(pos[0])
		if err != nil {
			return nil, err
		}
		k := scPair{a.id, b.id}
		frames := w.net[k]
		if v, ok := args["n"]; ok {
			m, err := strconv.Atoi(v[0])
			if err != nil {
				return nil, err
			}
			frames = frames[:min(m, len(frames))]
		}
		w.net[k] = w.net[k][len(frames):]
		if len(frames) == 0 {
			out.WriteString("nothing to " + d.Cmd + "\n")
		}
		for _, f := range frames {
			if d.Cmd == "drop" {
				fmt.Fprintf(&out, "dropped %s → %s %s\n", a.id, b.id, f.desc)
				continue
			}
			if err := b.step(a.id, f, &out); err != nil {
				return nil, err
			}
		}
	case "tick":
		if len(pos) != 2 || !strings.HasPrefix(pos[1], "@") {
			return nil, errors.New("want NODE|all @MS")
		}
		ms, err := strconv.ParseInt(pos[1][1:], 10, 64)
		if err != nil {
			return nil, err
		}
		at := scEpoch.Add(time.Duration(ms) * time.Millisecond)
		if at.Before(w.now) {
			return nil, fmt.Errorf("time goes forward: now is @%d", w.now.Sub(scEpoch).Milliseconds())
		}
		w.now = at
		for _, n := range w.nodes {
			if pos[0] == "all" || string(n.id) == pos[0] {
				n.eng.Tick(w.now)
				n.drain(&out)
			}
		}
	case "stabilize":
		rounds := 20
		if v, ok := args["rounds"]; ok {
			var err error
			if rounds, err = strconv.Atoi(v[0]); err != nil {
				return nil, err
			}
		}
		return &out, w.stabilize(rounds, &out)
	case "refuse":
		n, err := w.node(pos[0])
		if err != nil {
			return nil, err
		}
		n.refuse = true
		fmt.Fprintf(&out, "%s will refuse the next delta it applies\n", n.id)
	case "show":
		n, err := w.node(pos[0])
		if err != nil {
			return nil, err
		}
		n.show(&out)
	case "digests":
		w.digests(&out)
	case "network":
		for _, k := range w.pairs() {
			for _, f := range w.net[k] {
				fmt.Fprintf(&out, "%s → %s %s\n", k.from, k.to, f.desc)
			}
		}
		if out.Len() == 0 {
			out.WriteString("quiet\n")
		}
	default:
		return nil, fmt.Errorf("unknown command %q", d.Cmd)
	}
	return &out, nil
}

func (w *scWorld) newNode(pos []string, args map[string][]string) error {
	if len(pos) != 1 || w.byID(PeerID(pos[0])) != nil {
		return errors.New("want one new node name")
	}
	n := &scNode{w: w, i: len(w.nodes), id: PeerID(pos[0]), read: map[string]bool{}, write: map[string]bool{},
		st: NewMemState(), clock: crdt.NewClock(0)}
	n.signer, n.rep = testSigner(n.i)
	for _, ns := range args["read"] {
		n.read[ns] = true
	}
	for _, ns := range args["write"] {
		n.write[ns] = true
	}
	cfg := Config{}
	for k, v := range args {
		var err error
		switch k {
		case "read", "write":
		case "window":
			cfg.Window, err = strconv.Atoi(v[0])
		case "queue":
			cfg.QueueMaxDeltas, err = strconv.Atoi(v[0])
		case "ack":
			cfg.AckTimeout, err = time.ParseDuration(v[0])
		case "ae":
			cfg.AntiEntropyInterval, err = time.ParseDuration(v[0])
		case "rtx":
			cfg.Retransmits, err = strconv.Atoi(v[0])
		default:
			err = fmt.Errorf("unknown option %q", k)
		}
		if err != nil {
			return err
		}
	}
	cfg = testConfig(cfg, n.id, n.i)
	n.eng = New(cfg, n.st, scPolicy{w: w, self: n})
	w.nodes = append(w.nodes, n)
	return nil
}

// localWrite edits one field as the node does (touching updated_at too,
// so the edit adds a dot that stays), seals the delta and hands it over.
func (n *scNode) localWrite(ns, id, field, value string) error {
	m := n.st.Map(ns)
	if _, err := n.clock.Observe(m.MaxTimestamp(), n.w.now); err != nil {
		return err
	}
	d, err := m.Set(n.rep, n.clock.Now(n.w.now), id, field, []byte(value))
	if err != nil {
		return err
	}
	ua, err := m.Set(n.rep, n.clock.Now(n.w.now), id, "ua", []byte(value))
	if err != nil {
		return err
	}
	d.Join(ua)
	n.eng.LocalDelta(ns, sealInto(m, ns, d, n.signer))
	return nil
}

// step hands one frame to the engine, then drains it.
func (n *scNode) step(from PeerID, f scFrame, out *strings.Builder) error {
	msg, err := n.w.codec.Decode(f.frame)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s ← %s %s\n", n.id, from, f.desc)
	if err := n.eng.Step(from, msg); err != nil {
		return err
	}
	n.drain(out)
	return nil
}

// drain is the node's loop (doc.go, "The loop"): take Ready, apply or
// refuse each delta, Advance, send; again while HasReady.
func (n *scNode) drain(out *strings.Builder) {
	for n.eng.HasReady() {
		rd := n.eng.Ready()
		var refused []Refusal
		for i, a := range rd.Apply {
			if n.refuse {
				n.refuse = false
				refused = append(refused, Refusal{Index: i, Err: errScenarioRefusal})
				fmt.Fprintf(out, "  %s refuses %s from %s: %s\n", n.id, a.Namespace, a.From, scRecords(a.Delta))
				continue
			}
			n.clock.Observe(a.Delta.MaxTimestamp(), n.w.now)
			n.st.Apply(a)
			fmt.Fprintf(out, "  %s applies %s from %s: %s\n", n.id, a.Namespace, a.From, scRecords(a.Delta))
		}
		n.eng.Advance(refused)
		for _, rj := range rd.Rejected {
			fmt.Fprintf(out, "  %s rejects %s from %s: %v\n", n.id, rj.Namespace, rj.From, n.w.names(rj.Err.Error()))
		}
		for _, err := range rd.Errors {
			fmt.Fprintf(out, "  %s state error: %v\n", n.id, err)
		}
		for _, env := range rd.Messages {
			frame, err := n.w.codec.Encode(env.Msg)
			if err != nil {
				n.w.t.Fatal(err)
			}
			desc := scDescribe(env.Msg)
			k := scPair{n.id, env.To}
			n.w.net[k] = append(n.w.net[k], scFrame{frame: frame, desc: desc})
			fmt.Fprintf(out, "  %s → %s %s\n", n.id, env.To, desc)
		}
	}
}

// names replaces replica ids in s by the names of their nodes.
func (w *scWorld) names(s string) string {
	for _, n := range w.nodes {
		s = strings.ReplaceAll(s, fmt.Sprintf("replica %v", n.rep), "replica of "+string(n.id))
	}
	return s
}

func (w *scWorld) pairs() []scPair {
	var ks []scPair
	for k, fs := range w.net {
		if len(fs) > 0 {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b scPair) int {
		return strings.Compare(string(a.from)+" "+string(a.to), string(b.from)+" "+string(b.to))
	})
	return ks
}

// stabilize delivers, round after round, everything waiting at the start
// of the round, pair by pair in order, until the network is quiet.
func (w *scWorld) stabilize(rounds int, out *strings.Builder) error {
	for range rounds {
		ks := w.pairs()
		if len(ks) == 0 {
			return nil
		}
		waiting := map[scPair]int{}
		for _, k := range ks {
			waiting[k] = len(w.net[k])
		}
		for _, k := range ks {
			frames := w.net[k][:waiting[k]]
			w.net[k] = w.net[k][waiting[k]:]
			for _, f := range frames {
				if err := w.byID(k.to).step(k.from, f, out); err != nil {
					return err
				}
			}
		}
	}
	if len(w.pairs()) > 0 {
		return fmt.Errorf("not quiet after %d rounds", rounds)
	}
	return nil
}

// scDescribe renders a message: its kind, sequence and, per namespace, the
// records it carries.
func scDescribe(m *wire.Message) string {
	var b strings.Builder
	switch m.Kind {
	case wire.KindDeltas:
		fmt.Fprintf(&b, "deltas#%d", m.Seq)
	case wire.KindAck:
		fmt.Fprintf(&b, "ack#%d", m.Seq)
	default:
		b.WriteString(m.Kind.String())
	}
	for _, nd := range m.Deltas {
		d, err := crdt.DecodeMap(nd.Delta, crdt.DefaultLimits())
		if err != nil {
			fmt.Fprintf(&b, " %s: undecodable", nd.Namespace)
			continue
		}
		fmt.Fprintf(&b, " %s: %s", nd.Namespace, scRecords(d))
	}
	if len(m.Contexts) > 0 {
		var nss []string
		for _, nc := range m.Contexts {
			nss = append(nss, nc.Namespace)
		}
		kind := "context"
		if m.Kind == wire.KindSyncRequest {
			kind = "asks"
		}
		fmt.Fprintf(&b, " %s %s", kind, strings.Join(nss, ","))
	}
	return b.String()
}

// scRecords lists the ids a delta carries, or says it carries none.
func scRecords(d *crdt.Map) string {
	ids := d.EntryIDs()
	if len(ids) == 0 {
		return "(no records)"
	}
	return strings.Join(ids, ",")
}

func (n *scNode) show(out *strings.Builder) {
	for _, ns := range n.st.Namespaces() {
		m := n.st.Map(ns)
		fmt.Fprintf(out, "%s\n", ns)
		for _, id := range m.EntryIDs() {
			rec := m.Entry(id)
			var fs []string
			for _, f := range rec.FieldNames() {
				if f == "ua" {
					continue
				}
				v, _ := rec.Field(f)
				fs = append(fs, fmt.Sprintf("%s=%s", f, v.Value))
			}
			fmt.Fprintf(out, "  %s %s\n", id, strings.Join(fs, " "))
		}
	}
	if len(n.eng.pending) > 0 {
		fmt.Fprintf(out, "held deltas: %d\n", len(n.eng.pending))
	}
	for _, s := range n.eng.Stats() {
		fmt.Fprintf(out, "peer %s: queue=%d inflight=%d sent=%d recv=%d rejected=%d retransmits=%d fallbacks=%d syncs=%d maxqueue=%d\n",
			s.Peer, s.QueueDeltas, s.InFlight, s.DeltasSent, s.DeltasRecv, s.Rejected, s.Retransmits, s.Fallbacks, s.SyncsSent, s.MaxQueueDepth)
	}
}

// digests groups, per namespace any node holds, the nodes whose states of
// it are equal.
func (w *scWorld) digests(out *strings.Builder) {
	var nss []string
	for _, n := range w.nodes {
		for _, ns := range n.st.Namespaces() {
			if !slices.Contains(nss, ns) {
				nss = append(nss, ns)
			}
		}
	}
	slices.Sort(nss)
	for _, ns := range nss {
		var groups [][]string
		var keys []crdt.Digest
		for _, n := range w.nodes {
			if !n.mayRead(ns) {
				continue
			}
			dg := n.st.Map(ns).Digest()
			i := slices.Index(keys, dg)
			if i < 0 {
				keys, groups = append(keys, dg), append(groups, nil)
				i = len(keys) - 1
			}
			groups[i] = append(groups[i], string(n.id))
		}
		if len(groups) == 1 {
			fmt.Fprintf(out, "%s: equal (%s)\n", ns, strings.Join(groups[0], " "))
			continue
		}
		var parts []string
		for _, g := range groups {
			parts = append(parts, "{"+strings.Join(g, " ")+"}")
		}
		fmt.Fprintf(out, "%s: differ %s\n", ns, strings.Join(parts, " "))
	}
}
