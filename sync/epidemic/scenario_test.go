package epidemic

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs testdata/*.txt with datadriven: nodes over a network
// that delivers, drops or holds each message as the script says. `go test
// -run TestScenarios -rewrite` regenerates the outputs. Commands:
//
//	node NAME… [active=N] [passive=N] [walk=A/P] [threshold=N] [shuffle=DUR]
//	                        nodes (time 0), every other field the default
//	                        but ShuffleInterval (1h unless given)
//	join NODE CONTACT       NODE.Join(CONTACT)
//	hint NODE PEER…         NODE.Hint(PEER…)
//	broadcast NODE ID       NODE.Broadcast of payload "ID"
//	deliver [FROM->TO]      deliver what is waiting (of that pair), once
//	drop [FROM->TO] [kind=K] lose what is waiting (of that pair, kind)
//	stabilize               deliver until nothing waits (20 rounds at most)
//	tick +DUR               advance the clock; Tick every live node
//	fail NODE PEER          NODE.PeerFailed(PEER)
//	kill NODE               NODE stops; what is sent to it is lost and its
//	                        sender told (PeerFailed), as a transport would
//	show NODE…              views, trees, awaited payloads
//	links                   every live node's active view, and asymmetries
//
// After every input each node's Ready is drained and printed: messages
// sent, payloads delivered, connections opened and closed.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, file string) {
		w := &scWorld{nodes: map[PeerID]*scNode{}, now: simEpoch}
		datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
			out, err := w.run(d)
			if err != nil {
				t.Fatalf("%s: %s: %v", d.Pos, d.FullCmd(), err)
			}
			return strings.TrimRight(out.String(), "\n")
		})
	})
}

type scWorld struct {
	nodes map[PeerID]*scNode
	order []PeerID
	net   []scFrame // in order of sending
	now   time.Time
	out   *strings.Builder
}

type scNode struct {
	n    *Node
	dead bool
}

type scFrame struct {
	from, to PeerID
	msg      Message
}

func scID(s string) MsgID {
	var id MsgID
	copy(id[:], s)
	return id
}

func scName(id MsgID) string { return strings.TrimRight(string(id[:]), "\x00") }

func (w *scWorld) node(name string) (*scNode, error) {
	if n := w.nodes[PeerID(name)]; n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("no node %q", name)
}

func (w *scWorld) run(d *datadriven.TestData) (*strings.Builder, error) {
	var out strings.Builder
	w.out = &out
	var pos []string
	args := map[string]string{}
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			pos = append(pos, a.Key)
		} else {
			args[a.Key] = a.Vals[0]
		}
	}
	switch d.Cmd {
	case "node":
		return &out, w.newNodes(pos, args)
	case "join", "hint", "broadcast", "fail":
		if len(pos) < 2 {
			return nil, errors.New("want NODE ARG…")
		}
		n, err := w.node(pos[0])
		if err != nil {
			return nil, err
		}
		switch d.Cmd {
		case "join":
			n.n.Join(PeerID(pos[1]))
		case "hint":
			var ps []PeerID
			for _, p := range pos[1:] {
				ps = append(ps, PeerID(p))
			}
			n.n.Hint(ps...)
		case "broadcast":
			if !n.n.Broadcast(scID(pos[1]), []byte(pos[1])) {
				fmt.Fprintf(&out, "%s: %s already here\n", pos[0], pos[1])
			}
		case "fail":
			n.n.PeerFailed(PeerID(pos[1]))
		}
		w.drain(PeerID(pos[0]))
	case "deliver", "drop":
		from, to, err := w.pairArg(pos)
		if err != nil {
			return nil, err
		}
		w.deliver(d.Cmd == "drop", from, to, args["kind"])
	case "stabilize":
		for i := 0; len(w.net) > 0; i++ {
			if i == 20 {
				return nil, errors.New("not stable after 20 rounds")
			}
			w.deliver(false, "", "", "")
		}
	case "tick":
		if len(pos) != 1 || !strings.HasPrefix(pos[0], "+") {
			return nil, errors.New("want tick +DUR")
		}
		dur, err := time.ParseDuration(pos[0][1:])
		if err != nil {
			return nil, err
		}
		w.now = w.now.Add(dur)
		for _, id := range w.order {
			if n := w.nodes[id]; !n.dead {
				n.n.Tick(w.now)
				w.drain(id)
			}
		}
	case "kill":
		n, err := w.node(pos[0])
		if err != nil {
			return nil, err
		}
		n.dead = true
	case "show":
		for _, p := range pos {
			n, err := w.node(p)
			if err != nil {
				return nil, err
			}
			w.show(p, n.n)
		}
	case "links":
		w.links()
	default:
		return nil, fmt.Errorf("unknown command %q", d.Cmd)
	}
	return &out, nil
}

func (w *scWorld) newNodes(names []string, args map[string]string) error {
	for _, name := range names {
		c := Config{Self: PeerID(name), ShuffleInterval: time.Hour}
		for k, v := range args {
			var err error
			switch k {
			case "active":
				c.ActiveSize, err = strconv.Atoi(v)
			case "passive":
				c.PassiveSize, err = strconv.Atoi(v)
			case "walk":
				a, p, _ := strings.Cut(v, "/")
				if c.ActiveWalk, err = strconv.Atoi(a); err == nil {
					c.PassiveWalk, err = strconv.Atoi(p)
				}
			case "threshold":
				c.Threshold, err = strconv.Atoi(v)
			case "shuffle":
				c.ShuffleInterval, err = time.ParseDuration(v)
			default:
				err = fmt.Errorf("unknown argument %s", k)
			}
			if err != nil {
				return err
			}
		}
		c.ShuffleActive, c.ShufflePassive = min(3, c.PassiveSize/3), min(4, c.PassiveSize/3)
		n, err := New(c)
		if err != nil {
			return err
		}
		n.Tick(w.now)
		w.nodes[c.Self] = &scNode{n: n}
		w.order = append(w.order, c.Self)
	}
	return nil
}

func (w *scWorld) pairArg(pos []string) (from, to PeerID, err error) {
	if len(pos) == 0 {
		return "", "", nil
	}
	a, b, ok := strings.Cut(pos[0], "->")
	if !ok {
		return "", "", fmt.Errorf("want FROM->TO, got %q", pos[0])
	}
	return PeerID(a), PeerID(b), nil
}

// deliver steps (or drops) what waits now, in order of sending; what the
// steps send waits for the next call.
func (w *scWorld) deliver(drop bool, from, to PeerID, kind string) {
	var now, later []scFrame
	for _, f := range w.net {
		if (from == "" || f.from == from && f.to == to) && (kind == "" || f.msg.Kind.String() == kind) {
			now = append(now, f)
		} else {
			later = append(later, f)
		}
	}
	w.net = later
	if len(now) == 0 {
		fmt.Fprintln(w.out, "nothing waiting")
	}
	for _, f := range now {
		dst := w.nodes[f.to]
		switch {
		case drop:
			fmt.Fprintf(w.out, "dropped %s → %s %s\n", f.from, f.to, fmtMsg(f.msg))
		case dst == nil || dst.dead:
			fmt.Fprintf(w.out, "lost %s → %s %s: %s is down\n", f.from, f.to, fmtMsg(f.msg), f.to)
			if src := w.nodes[f.from]; src != nil && !src.dead {
				src.n.PeerFailed(f.to)
				fmt.Fprintf(w.out, "  %s: PeerFailed(%s)\n", f.from, f.to)
				w.drain(f.from)
			}
		default:
			fmt.Fprintf(w.out, "%s ← %s %s\n", f.to, f.from, fmtMsg(f.msg))
			if err := dst.n.Step(f.from, f.msg); err != nil {
				fmt.Fprintf(w.out, "  error: %v\n", err)
			}
			w.drain(f.to)
		}
	}
}

func (w *scWorld) drain(id PeerID) {
	n := w.nodes[id].n
	for n.HasReady() {
		rd := n.Ready()
		for _, d := range rd.Deliver {
			fmt.Fprintf(w.out, "  %s delivers %s (origin %s, from %s, round %d)\n", id, scName(d.ID), d.Origin, d.From, d.Round)
		}
		if len(rd.Connect) > 0 {
			fmt.Fprintf(w.out, "  %s connects %v\n", id, rd.Connect)
		}
		for _, e := range rd.Messages {
			fmt.Fprintf(w.out, "  %s → %s %s\n", id, e.To, fmtMsg(e.Msg))
			w.net = append(w.net, scFrame{from: id, to: e.To, msg: e.Msg})
		}
		if len(rd.Disconnect) > 0 {
			fmt.Fprintf(w.out, "  %s disconnects %v\n", id, rd.Disconnect)
		}
	}
}

func fmtMsg(m Message) string {
	var b strings.Builder
	b.WriteString(m.Kind.String())
	switch m.Kind {
	case KindGossip:
		fmt.Fprintf(&b, " %s origin=%s round=%d", scName(m.ID), m.Origin, m.Round)
	case KindIHave:
		for _, a := range m.IHave {
			fmt.Fprintf(&b, " %s@%d", scName(a.ID), a.Round)
		}
	case KindGraft, KindWant, KindPrune:
		if m.Origin != "" {
			fmt.Fprintf(&b, " origin=%s", m.Origin)
		}
		for _, id := range m.IDs {
			fmt.Fprintf(&b, " %s", scName(id))
		}
	case KindForwardJoin, KindShuffle:
		fmt.Fprintf(&b, " peer=%s ttl=%d", m.Peer, m.TTL)
	case KindNeighbor:
		if m.Priority {
			b.WriteString(" priority")
		}
	case KindNeighborReply:
		if m.Accept {
			b.WriteString(" accept")
		} else {
			b.WriteString(" reject")
		}
	}
	if len(m.Peers) > 0 {
		fmt.Fprintf(&b, " peers=%v", m.Peers)
	}
	return b.String()
}

func (w *scWorld) show(name string, n *Node) {
	fmt.Fprintf(w.out, "%s: active %v passive %v\n", name, n.Active(), n.Passive())
	for _, o := range slices.Sorted(func(yield func(PeerID) bool) {
		for o := range n.trees {
			if !yield(o) {
				return
			}
		}
	}) {
		fmt.Fprintf(w.out, "  tree of %s: eager %v\n", o, n.Eager(o))
	}
	if n.Missing() > 0 {
		fmt.Fprintf(w.out, "  awaiting %d payloads\n", n.Missing())
	}
}

// links prints every live node's active view and the links known at one
// end only.
func (w *scWorld) links() {
	var asym []string
	for _, id := range w.order {
		n := w.nodes[id]
		if n.dead {
			continue
		}
		fmt.Fprintf(w.out, "%s: %v\n", id, n.n.Active())
		for _, p := range n.n.Active() {
			if o := w.nodes[p]; o == nil || o.dead || o.n.link(id) == nil {
				asym = append(asym, fmt.Sprintf("%s→%s", id, p))
			}
		}
	}
	if len(asym) > 0 {
		fmt.Fprintf(w.out, "one-sided: %v\n", asym)
	}
}
