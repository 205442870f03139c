package dedup_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/dedup"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/semantic"
	"github.com/mnemohq/mnemo/node/similarity"
)

// manualOnly turns merging on save off, for the tests of Find and Merge.
var manualOnly = dedup.OnSaveConfig{Disabled: true}

const (
	ledger  = "Never use the ORM for the payments ledger: lazy loading issued one query per row and reconciliation took four hours."
	ledger2 = "Never use the ORM for the payments ledger: lazy loading issued one query per row and reconciliation took four hours. Use SQL."
	team    = "team://backend"
)

// gate holds the merge-on-save worker before each check until opened;
// entered receives each key the worker is about to check.
type gate struct {
	open    chan struct{}
	entered chan memory.MemoryKey
}

func holdWorker(d *dedup.Dedup) *gate {
	g := &gate{open: make(chan struct{}), entered: make(chan memory.MemoryKey, 64)}
	d.SetBeforeCheck(func(k memory.MemoryKey) {
		g.entered <- k
		<-g.open
	})
	return g
}

func get(t *testing.T, s *memory.Service, id string) memapi.Memory {
	t.Helper()
	m, err := s.Get(context.Background(), agent("alice"), id, true)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return m
}

// newDedup builds the feature with cfg, merging on save as configured.
func newDedup(t testing.TB, cfg dedup.Config) *dedup.Dedup {
	t.Helper()
	d, err := dedup.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// openTeam opens a service owned by alice with features, creates team and
// lets bob read and write it.
func openTeam(t testing.TB, features ...memory.Feature) (*memory.Service, *memorytest.Clock) {
	t.Helper()
	s, clk := memorytest.Open(t, memory.Config{IsLocal: memorytest.AllLocal, Features: features})
	memorytest.Create(t, s, "alice", team)
	memorytest.Grant(t, s, "alice", team, "agent://bob", "read,write")
	return s, clk
}

// wantMerged checks that loser was merged into surv: surv carries both
// authors, the loser as a source and the consensus mark, at confidence
// want; the loser is soft-deleted with lineage = surv.
func wantMerged(t *testing.T, s *memory.Service, surv, loser string, want float64) {
	t.Helper()
	sm, lm := get(t, s, surv), get(t, s, loser)
	for _, p := range []string{"author:agent://alice", "author:agent://bob", "source:" + loser, dedup.ConsensusMark} {
		if !slices.Contains(sm.Provenance, p) {
			t.Errorf("survivor provenance %v lacks %q", sm.Provenance, p)
		}
	}
	if sm.DeletedAt != nil || sm.Confidence != want {
		t.Errorf("survivor deleted_at %v confidence %v, want live at %v", sm.DeletedAt, sm.Confidence, want)
	}
	if lm.DeletedAt == nil || lm.Lineage != surv {
		t.Errorf("loser deleted_at %v lineage %q, want soft-deleted with lineage %s", lm.DeletedAt, lm.Lineage, surv)
	}
}

func TestSaveMergesAnotherAuthorsDuplicate(t *testing.T) {
	d := newDedup(t, dedup.Config{})
	g := holdWorker(d)
	s, clk := openTeam(t, d)
	conf := 0.5
	a := memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: ledger, Confidence: &conf})
	<-g.entered // the worker holds a's check
	clk.Advance(time.Minute)
	b := memorytest.Save(t, s, agent("bob"), memapi.SaveRequest{Namespace: team, Content: ledger2})
	// bob's save returned while the worker is held: it did not wait for
	// its check, and nothing is merged yet.
	if m := get(t, s, b.ID); m.DeletedAt != nil {
		t.Fatal("bob's duplicate was merged before the worker ran")
	}
	close(g.open)
	d.Flush()
	wantMerged(t, s, a.ID, b.ID, 0.7)
	if st := d.SaveStats(); st.Merged != 1 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A later change of the survivor checks it again: nothing is left to
	// merge, and the boost is not added twice.
	tags := []string{"payments"}
	if _, err := s.Update(context.Background(), agent("alice"), a.ID, memapi.UpdateRequest{Tags: &tags}); err != nil {
		t.Fatal(err)
	}
	d.Flush()
	wantMerged(t, s, a.ID, b.ID, 0.7)
	if st := d.SaveStats(); st.Merged != 1 {
		t.Fatalf("stats after the update %+v", st)
	}
	// A third author's duplicate joins the survivor's provenance; the
	// consensus was counted already, so the confidence stays.
	memorytest.Grant(t, s, "alice", team, "agent://carol", "read,write")
	clk.Advance(time.Minute)
	c := memorytest.Save(t, s, agent("carol"), memapi.SaveRequest{Namespace: team, Content: ledger + " Really."})
	d.Flush()
	wantMerged(t, s, a.ID, c.ID, 0.7)
	if sm := get(t, s, a.ID); !slices.Contains(sm.Provenance, "author:agent://carol") {
		t.Fatalf("carol is not among the survivor's contributors: %v", sm.Provenance)
	}
}

func TestSaveDoesNotMergeSameAuthorOrPrivate(t *testing.T) {
	s, d := openTest(t, dedup.Config{})
	memorytest.Create(t, s, "alice", team)
	memorytest.Grant(t, s, "alice", team, "agent://bob", "read,write")
	memorytest.Grant(t, s, "alice", "agent://alice", "agent://bob", "read,write")
	// The same author twice in the team namespace.
	a1 := memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: ledger})
	a2 := memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: ledger2})
	// Two authors in alice's own namespace.
	p1 := memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: "agent://alice", Content: "deploys freeze on fridays after noon, no exceptions for hotfixes"})
	p2 := memorytest.Save(t, s, agent("bob"), memapi.SaveRequest{Namespace: "agent://alice", Content: "deploys freeze on fridays after noon, no exceptions for hotfixes."})
	d.Flush()
	for _, id := range []string{a1.ID, a2.ID, p1.ID, p2.ID} {
		if m := get(t, s, id); m.DeletedAt != nil || slices.Contains(m.Provenance, dedup.ConsensusMark) {
			t.Errorf("%s (%s, %s) was merged", id, m.Namespace, m.Author)
		}
	}
	if get(t, s, p2.ID).Author != "agent://bob" {
		t.Fatal("the test would not have two authors in agent://alice")
	}
	if st := d.SaveStats(); st.Merged != 0 || st.Checked != 2 {
		t.Fatalf("stats %+v: only the team namespace's two saves are checked", st)
	}
}

func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	d, err := dedup.New(dedup.Config{OnSave: dedup.OnSaveConfig{QueueSize: 1}})
	if err != nil {
		t.Fatal(err)
	}
	g := holdWorker(d)
	s, _ := memorytest.Open(t, memory.Config{IsLocal: memorytest.AllLocal, Features: []memory.Feature{d}})
	memorytest.Create(t, s, "alice", team)
	memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: "first note"})
	<-g.entered                                                                                        // held: the queue is empty, the worker busy
	memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: "second note"}) // fills the queue
	for i := range 3 {                                                                                 // each finds it full
		memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: "note " + string(rune('a'+i))})
	}
	if st := d.SaveStats(); st.Dropped != 3 {
		t.Fatalf("stats %+v, want 3 dropped", st)
	}
	close(g.open)
	d.Flush()
	if st := d.SaveStats(); st.Checked != 2 || st.Dropped != 3 {
		t.Fatalf("stats %+v, want 2 checked", st)
	}
}

// A memory whose check a full queue dropped is still a candidate for a
// later duplicate: the band tables are rebuilt from the store once the
// queue has drained.
func TestDroppedMemoryIsStillFoundLater(t *testing.T) {
	d := newDedup(t, dedup.Config{OnSave: dedup.OnSaveConfig{QueueSize: 1}})
	g := holdWorker(d)
	s, clk := openTeam(t, d)
	memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: "first note"})
	<-g.entered
	memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: "second note"}) // fills the queue
	a := memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: ledger})   // dropped
	if st := d.SaveStats(); st.Dropped != 1 {
		t.Fatalf("stats %+v, want alice's ledger note dropped", st)
	}
	close(g.open)
	d.Flush()
	clk.Advance(time.Minute)
	b := memorytest.Save(t, s, agent("bob"), memapi.SaveRequest{Namespace: team, Content: ledger2})
	d.Flush()
	wantMerged(t, s, a.ID, b.ID, 1) // the default 0.8, boosted
}

// The band tables follow a memory's text: a memory edited into a
// duplicate of another author's is merged, and one edited away from it
// is not.
func TestEditedTextIsWhatIsCompared(t *testing.T) {
	d := newDedup(t, dedup.Config{})
	s, clk := openTeam(t, d)
	const cache = "the build cache lives on the shared volume and is wiped every sunday night"
	a := memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Title: "build cache", Content: cache})
	d.Flush()
	away := ledger
	if _, err := s.Update(context.Background(), agent("alice"), a.ID, memapi.UpdateRequest{Content: &away}); err != nil {
		t.Fatal(err)
	}
	d.Flush()
	clk.Advance(time.Minute) // a is the older, the survivor
	b := memorytest.Save(t, s, agent("bob"), memapi.SaveRequest{Namespace: team, Title: "build cache", Content: cache + "."})
	d.Flush()
	if m := get(t, s, b.ID); m.DeletedAt != nil {
		t.Fatalf("bob's note was merged into a memory no longer like it (lineage %q)", m.Lineage)
	}
	into := ledger + " Keep it so."
	if _, err := s.Update(context.Background(), agent("bob"), b.ID, memapi.UpdateRequest{Content: &into}); err != nil {
		t.Fatal(err)
	}
	d.Flush()
	wantMerged(t, s, a.ID, b.ID, 1) // the default 0.8, boosted
}

func TestOnSaveConfig(t *testing.T) {
	for _, n := range []int{-1, 65537} {
		if _, err := dedup.New(dedup.Config{OnSave: dedup.OnSaveConfig{QueueSize: n}}); err == nil {
			t.Errorf("queue size %d accepted", n)
		}
	}
	d, err := dedup.New(dedup.Config{})
	if err != nil || d.Config().OnSave.QueueSize != dedup.DefaultSaveQueue {
		t.Fatalf("default queue: %+v %v", d.Config().OnSave, err)
	}
}

// replicaNode opens a node of its own for agent name, with merging on
// save, whose key KeyOf binds to the other node's agent.
func replicaNode(t *testing.T, name string, replica crdt.ReplicaID, start time.Time, keyOf func(namespace.Address) (ed25519.PublicKey, bool)) (*memory.Service, *dedup.Dedup) {
	t.Helper()
	d, err := dedup.New(dedup.Config{})
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("node " + name))
	id, err := acl.IdentityFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	s, err := memory.Open(memory.Config{Agent: agent(name).Principal, Identity: id, Replica: replica, Features: []memory.Feature{d},
		Now: (&memorytest.Clock{T: start}).Now, KeyOf: keyOf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, d
}

// TestReplicasMergeAlike: alice's node and bob's node each receive the
// other's save of the same knowledge, each merges it on its own, and
// their states, once exchanged, are one: the older memory survives, the
// boost counted once.
func TestReplicasMergeAlike(t *testing.T) {
	nodes := map[string]*memory.Service{}
	bind := func(p namespace.Address) (ed25519.PublicKey, bool) {
		if n, ok := nodes[p.Name]; ok && p.Kind == namespace.KindAgent && n.Owner() == p {
			return n.Identity().Public, true
		}
		return nil, false
	}
	na, da := replicaNode(t, "alice", 1, memorytest.Start, bind)
	nb, db := replicaNode(t, "bob", 2, memorytest.Start.Add(time.Minute), bind)
	nc, dc := replicaNode(t, "carol", 3, memorytest.Start, bind) // reads the team, may not write it
	nodes["alice"], nodes["bob"], nodes["carol"] = na, nb, nc
	state := func(n *memory.Service) *crdt.Map {
		t.Helper()
		st, err := n.Store().State(team)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	apply := func(to *memory.Service, st *crdt.Map) {
		t.Helper()
		if err := to.ApplyRemote(team, st); err != nil {
			t.Fatal(err)
		}
	}
	sync := func(from, to *memory.Service) { t.Helper(); apply(to, state(from)) }
	flush := func() {
		for _, d := range []*dedup.Dedup{da, db, dc} {
			d.Flush()
		}
	}
	memorytest.Create(t, na, "alice", team)
	memorytest.Grant(t, na, "alice", team, "agent://bob", "read,write")
	memorytest.Grant(t, na, "alice", team, "agent://carol", "read")
	sync(na, nb)
	conf := 0.5
	a := memorytest.Save(t, na, agent("alice"), memapi.SaveRequest{Namespace: team, Content: ledger, Confidence: &conf})
	b := memorytest.Save(t, nb, agent("bob"), memapi.SaveRequest{Namespace: team, Content: ledger2})
	flush()
	// Each node receives the other's memory and merges on its own; carol's
	// node receives both and may not write.
	sta, stb := state(na), state(nb) // both taken before either node merges
	apply(nb, sta)
	apply(na, stb)
	apply(nc, sta)
	apply(nc, stb)
	flush()
	if sa, sb := da.SaveStats(), db.SaveStats(); sa.Merged != 1 || sb.Merged != 1 {
		t.Fatalf("each node should have merged on its own: %+v %+v", sa, sb)
	}
	if sc := dc.SaveStats(); sc.Merged != 0 || sc.NoWrite == 0 {
		t.Fatalf("carol's node (read only) merged: %+v", sc)
	}
	// Quiet nodes between exchanges: State reads the records and the
	// context at two moments, so a state taken during a write is torn.
	for range 2 {
		for _, p := range [][2]*memory.Service{{na, nb}, {nb, na}, {na, nc}} {
			sync(p[0], p[1])
			flush()
		}
	}
	var digests []string
	for _, n := range []*memory.Service{na, nb, nc} {
		sm, lm := get(t, n, a.ID), get(t, n, b.ID)
		if sm.DeletedAt != nil || sm.Confidence != 0.7 || !slices.Contains(sm.Provenance, "source:"+b.ID) || !slices.Contains(sm.Provenance, dedup.ConsensusMark) {
			t.Errorf("node %s survivor %+v", n.Owner(), sm)
		}
		if lm.DeletedAt == nil || lm.Lineage != a.ID {
			t.Errorf("node %s loser deleted_at %v lineage %q", n.Owner(), lm.DeletedAt, lm.Lineage)
		}
		st, err := n.Store().State(team)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, st.Digest().String())
	}
	if digests[0] != digests[1] || digests[0] != digests[2] {
		t.Fatal("the nodes' team namespaces differ after exchanging their merges")
	}
	if sa, sb := da.SaveStats(), db.SaveStats(); sa.Merged != 1 || sb.Merged != 1 {
		t.Fatalf("a node merged again after the exchange: %+v %+v", sa, sb)
	}
}

// TestCloseDrainsTheQueue: closing the service waits for the worker, which
// checks what was queued before the store closes.
func TestCloseDrainsTheQueue(t *testing.T) {
	d := newDedup(t, dedup.Config{})
	g := holdWorker(d)
	s, clk := openTeam(t, d)
	memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: ledger})
	<-g.entered
	clk.Advance(time.Minute)
	memorytest.Save(t, s, agent("bob"), memapi.SaveRequest{Namespace: team, Content: ledger2})
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	close(g.open)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if st := d.SaveStats(); st.Checked < 2 || st.Merged != 1 {
		t.Fatalf("stats after Close %+v: the queued save was not checked before the store closed", st)
	}
}

// BenchmarkSaveWithCheck: one save into a team namespace holding n other
// memories, with (on) and without (off) its check on save, flushed.
func BenchmarkSaveWithCheck(b *testing.B) {
	for _, n := range []int{300, 3000, 30000} {
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("n=%d/on=%v", n, on)
			b.Run(name, func(b *testing.B) {
				d, err := dedup.New(dedup.Config{OnSave: dedup.OnSaveConfig{Disabled: !on}})
				if err != nil {
					b.Fatal(err)
				}
				s, _ := memorytest.Open(b, memory.Config{IsLocal: memorytest.AllLocal, Features: []memory.Feature{d}})
				memorytest.Create(b, s, "alice", team)
				memorytest.Grant(b, s, "alice", team, "agent://bob", "read,write")
				for i := range n {
					memorytest.Save(b, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: fmt.Sprintf("note %d about topic %d and detail %d", i, i%97, i%89)})
				}
				d.Flush()
				b.ResetTimer()
				for i := range b.N {
					memorytest.Save(b, s, agent("bob"), memapi.SaveRequest{Namespace: team, Content: fmt.Sprintf("bob's own finding number %d", i)})
					d.Flush()
				}
			})
		}
	}
}

// synonymEmbedder embeds a text as its bag of words, a word and its
// synonym sharing a dimension (hashed into 64), deterministically.
type synonymEmbedder struct{}

func (synonymEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	synonym := map[string]string{"automobile": "car", "crimson": "red", "commutes": "drives", "daily": "day"}
	out := make([][]float64, len(texts))
	for i, t := range texts {
		v := make([]float64, 64)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !unicode.IsLetter(r) }) {
			if s, ok := synonym[w]; ok {
				w = s
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%64]++
		}
		out[i] = v
	}
	return out, nil
}

// With hybrid search on, merging on save compares the vectors the
// semantic feature computes after the save: a paraphrase MinHash does not
// see is merged once its vector is in, and a text on another subject is
// not.
func TestSaveMergesAParaphraseByItsVector(t *testing.T) {
	sem, err := semantic.New(semantic.Config{Enabled: true, Model: "synonyms", Embedder: synonymEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	d := newDedup(t, dedup.Config{})
	s, clk := openTeam(t, sem, d)
	const drives, commutes = "Dana drives a red car to the office every day", "Dana commutes in a crimson automobile to the office daily"
	if sim := similarity.Similarity(similarity.MinHash(drives+"\n"+drives), similarity.MinHash(commutes+"\n"+commutes)); sim >= dedup.DefaultThreshold {
		t.Fatalf("the paraphrase's MinHash similarity is %v: the test would not need vectors", sim)
	}
	a := memorytest.Save(t, s, agent("alice"), memapi.SaveRequest{Namespace: team, Content: drives})
	clk.Advance(time.Minute)
	other := memorytest.Save(t, s, agent("bob"), memapi.SaveRequest{Namespace: team, Content: "the payments ledger is reconciled every night by a batch job"})
	b := memorytest.Save(t, s, agent("bob"), memapi.SaveRequest{Namespace: team, Content: commutes})
	if err := sem.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.Flush()
	wantMerged(t, s, a.ID, b.ID, 1)
	if m := get(t, s, other.ID); m.DeletedAt != nil {
		t.Fatal("a memory on another subject was merged")
	}
}
