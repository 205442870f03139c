package wire

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/mnemohq/mnemo/crdt"
)

func TestRoundTripAndCompression(t *testing.T) {
	c := NewCodec(0)
	small := &Message{Kind: KindAck, Seq: 7}
	big := &Message{Kind: KindDeltas, Seq: 3, Deltas: []NamespaceDelta{{Namespace: "team://a", Delta: []byte(strings.Repeat("memory text ", 200))}}}
	for _, m := range []*Message{small, big} {
		f, err := c.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != m.Kind || got.Seq != m.Seq || len(got.Deltas) != len(m.Deltas) {
			t.Fatalf("round trip: %+v vs %+v", got, m)
		}
		if m == big && (f[0]&flagZstd == 0 || len(f) >= len(m.Deltas[0].Delta)) {
			t.Fatalf("large repetitive body not compressed: %d bytes", len(f))
		}
		if m == big && !bytes.Equal(got.Deltas[0].Delta, m.Deltas[0].Delta) {
			t.Fatal("payload changed")
		}
	}
}

// Peek reads the kind and the deltas' namespaces of a frame, compressed or
// not, as Decode does, and refuses what Decode refuses for those: a bad
// kind, a delta without a namespace.
func TestPeek(t *testing.T) {
	c := NewCodec(0)
	for _, m := range []*Message{
		{Kind: KindAck, Seq: 7},
		{Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 1, Round: 2}, Deltas: []NamespaceDelta{{Namespace: "team://x", Delta: []byte(strings.Repeat("memory text ", 200)), Sig: make([]byte, 64), Author: "ab"}}},
		{Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 11, Peer: "p", TTL: 2, Peers: []string{"a", "b"}}},
		{Kind: KindSyncReply, Deltas: []NamespaceDelta{{Namespace: "team://a", Delta: []byte(strings.Repeat("memory text ", 200))}, {Namespace: "project://p", Delta: []byte{1}, From: 3, Sig: make([]byte, 64)}},
			Contexts: []NamespaceContext{{Namespace: "team://a", Context: []byte{1}, RetSum: make([]byte, 32)}}},
	} {
		f, err := c.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		g, err := c.Peek(f)
		k, nss := g.Kind, g.Namespaces
		if err != nil || k != m.Kind || len(nss) != len(m.Deltas) {
			t.Fatalf("Peek: %v, %v, %v; want %v and %d namespaces", k, nss, err, m.Kind, len(m.Deltas))
		}
		if want := treeKind(m); g.TreeKind != want {
			t.Fatalf("Peek: tree kind %d, want %d", g.TreeKind, want)
		}
		for i, ns := range nss {
			if ns != m.Deltas[i].Namespace {
				t.Fatalf("namespace %d: %q, want %q", i, ns, m.Deltas[i].Namespace)
			}
		}
	}
	for name, m := range map[string]*Message{
		"kind 0":         {Kind: 0},
		"kind 9":         {Kind: 9},
		"no namespace":   {Kind: KindDeltas, Deltas: []NamespaceDelta{{Delta: []byte{1}}}},
		"long namespace": {Kind: KindDeltas, Deltas: []NamespaceDelta{{Namespace: strings.Repeat("x", 513)}}},
	} {
		f, err := c.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Peek(f); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Peek gave %v, want ErrCorrupt", name, err)
		}
		if _, err := c.Decode(f); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode gave %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := c.Peek([]byte{Version << 4}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a 1-byte frame: %v, want ErrCorrupt", err)
	}
	// A field Peek reads, given twice, is refused (Decode would keep the
	// last); one it skips is not.
	for name, body := range map[string][]byte{
		"kind twice":   {0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x04},
		"deltas twice": {0x83, 0xa1, 'k', 0x01, 0xa1, 'd', 0x90, 0xa1, 'd', 0x90},
	} {
		if _, err := c.Peek(append([]byte{Version << 4}, body...)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if g, err := c.Peek([]byte{Version << 4, 0x82, 0xa1, 'k', 0x04, 0xa1, 'q', 0x07}); err != nil || g.Kind != Kind(4) {
		t.Errorf("a kind and a field skipped: %v, %v", g, err)
	}
}

// Peek decompresses into buffers it reuses: peeking frames compressed and
// not, in turn, changes none of them.
func TestPeekLeavesFramesAlone(t *testing.T) {
	c := NewCodec(0)
	var frames, want [][]byte
	for i := range 20 {
		noise := make([]byte, 4000) // incompressible: the frame is the body, with room to spare
		_, _ = rand.NewChaCha8([32]byte{byte(i)}).Read(noise)
		m := &Message{Kind: KindDeltas, Seq: uint64(i), Deltas: []NamespaceDelta{{Namespace: "team://a", Delta: noise}}}
		if i%2 == 1 {
			m = &Message{Kind: KindDeltas, Seq: uint64(i), Deltas: []NamespaceDelta{{Namespace: "team://b", Delta: []byte(strings.Repeat(fmt.Sprint("delta ", i), 100+10*i))}}}
		}
		f, err := c.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		frames, want = append(frames, f), append(want, bytes.Clone(f))
	}
	for range 2 {
		for _, f := range frames {
			if _, err := c.Peek(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range frames {
		if !bytes.Equal(frames[i], want[i]) {
			t.Fatalf("frame %d changed by Peek", i)
		}
	}
}

// The Codec's one encoder is shared: concurrent Encodes of different
// messages each get their own frame back (run with -race).
func TestConcurrentEncodes(t *testing.T) {
	c := NewCodec(0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				text := []byte(strings.Repeat(fmt.Sprintf("goroutine %d message %d ", g, i), 40))
				f, err := c.Encode(&Message{Kind: KindDeltas, Seq: uint64(i), Deltas: []NamespaceDelta{{Namespace: "team://a", Delta: text}}})
				if err != nil {
					t.Error(err)
					return
				}
				m, err := c.Decode(f)
				if err != nil || f[0]&flagZstd == 0 || m.Seq != uint64(i) || !bytes.Equal(m.Deltas[0].Delta, text) {
					t.Errorf("goroutine %d message %d: %v", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A body compressed again (the same relayed delta for each eager peer)
// gives the very frame compressing it anew gives, in a slice of its own:
// changing one frame changes no other, and a different body between two
// equal ones is compressed for itself.
func TestSameBodyCompressedOnce(t *testing.T) {
	c := NewCodec(0)
	msg := func(text string) *Message {
		return &Message{Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 1, Round: 2},
			Deltas: []NamespaceDelta{{Namespace: "team://x", Delta: []byte(strings.Repeat(text, 100)), Sig: make([]byte, 64), Author: "ab"}}}
	}
	first, err := c.Encode(msg("relayed delta "))
	if err != nil || first[0]&flagZstd == 0 {
		t.Fatalf("first frame: %v, compressed %v", err, err == nil && first[0]&flagZstd != 0)
	}
	want := bytes.Clone(first)
	again, _ := c.Encode(msg("relayed delta "))
	fresh, _ := NewCodec(0).Encode(msg("relayed delta "))
	if !bytes.Equal(again, want) || !bytes.Equal(fresh, want) {
		t.Fatal("the same message gave another frame")
	}
	first[len(first)-1] ^= 0xff // the loop may hand a frame to code that writes it
	again[len(again)-1] ^= 0xff
	third, _ := c.Encode(msg("relayed delta "))
	if !bytes.Equal(third, want) {
		t.Fatal("changing one frame changed another")
	}
	other, _ := c.Encode(msg("another delta "))
	m, err := c.Decode(other)
	if err != nil || !bytes.Equal(m.Deltas[0].Delta, []byte(strings.Repeat("another delta ", 100))) {
		t.Fatalf("a different body: %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	c := NewCodec(1024)
	cases := map[string][]byte{
		"empty":        nil,
		"bad version":  {0x20, 0x80},
		"bad flags":    {0x1e, 0x80},
		"bad zstd":     {0x11, 1, 2, 3, 4},
		"not msgpack":  {0x10, 0xc1, 0xc1},
		"unknown kind": append([]byte{0x10}, mustBody(t, map[string]any{"k": 99})...),
		"oversized":    append([]byte{0x10}, make([]byte, 2000)...),
	}
	for name, f := range cases {
		if _, err := c.Decode(f); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	// a frame that decompresses past the limit is refused
	huge := &Message{Kind: KindDeltas, Deltas: []NamespaceDelta{{Namespace: "team://a", Delta: make([]byte, 4096)}}}
	f, err := NewCodec(0).Encode(huge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(f); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decompression bomb: %v", err)
	}
}

func mustBody(t *testing.T, v any) []byte {
	t.Helper()
	c := NewCodec(0)
	f, err := c.Encode(&Message{Kind: KindAck})
	if err != nil {
		t.Fatal(err)
	}
	_ = f
	var buf bytes.Buffer
	if err := newEnc(&buf).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func FuzzDecode(f *testing.F) {
	c := NewCodec(1 << 16)
	for _, m := range []*Message{
		{Kind: KindAck, Seq: 1},
		{Kind: KindDeltas, Seq: 2, Deltas: []NamespaceDelta{{Namespace: "team://x", Delta: []byte{1, 2, 3}}}},
		{Kind: KindSyncRequest, Contexts: []NamespaceContext{{Namespace: "team://x", Context: []byte{9}, Retracted: 1, RetSum: make([]byte, 32)}}, Reply: true},
		{Kind: KindSyncReply, Deltas: []NamespaceDelta{{Namespace: "project://p", Delta: bytes.Repeat([]byte("abc"), 400)}}},
		{Kind: KindBindings, Reply: true, BindingsSum: make([]byte, 32), BindingIDs: [][]byte{make([]byte, BindingIDSize), bytes.Repeat([]byte{7}, BindingIDSize)}},
		{Kind: KindBindings, BindingsOf: []uint64{1, 1 << 63}},
		{Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 1, Round: 2}, Deltas: []NamespaceDelta{{Namespace: "team://x", Delta: []byte{1}, Sig: make([]byte, 64), Author: "ab"}}},
		{Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 2, IHave: []Announcement{{ID: make([]byte, TreeIDSize), Round: 3}}}},
		{Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 11, Peer: "p", TTL: 2, Peers: []string{"a", "b"}}},
		{Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 241}}, // a kind past 127, in a body shorter than it
	} {
		fr, err := c.Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		g, perr := c.Peek(frame)
		kind, nss := g.Kind, g.Namespaces
		if perr != nil && !errors.Is(perr, ErrCorrupt) {
			t.Fatalf("Peek: error outside ErrCorrupt: %v", perr)
		}
		m, err := c.Decode(frame)
		if err == nil && perr == nil {
			if kind != m.Kind || len(nss) != len(m.Deltas) || g.TreeKind != treeKind(m) {
				t.Fatalf("Peek: %v with %d deltas (tree kind %d), Decode: %v with %d (%d)", kind, len(nss), g.TreeKind, m.Kind, len(m.Deltas), treeKind(m))
			}
			for i, ns := range nss {
				if ns != m.Deltas[i].Namespace {
					t.Fatalf("Peek: delta %d of %s, Decode: of %s", i, ns, m.Deltas[i].Namespace)
				}
			}
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error outside ErrCorrupt: %v", err)
			}
			return
		}
		again, err := c.Encode(m)
		if err != nil {
			return // a valid message may be too large to re-frame under the limit
		}
		if g, err := c.Peek(again); err != nil || g.Kind != m.Kind || g.TreeKind != treeKind(m) {
			t.Fatalf("Peek of a frame Encode made: %+v, %v; Decode: %v (tree kind %d)", g, err, m.Kind, treeKind(m))
		}
		m2, err := c.Decode(again)
		if err != nil || m2.Kind != m.Kind || m2.Seq != m.Seq || len(m2.Deltas) != len(m.Deltas) || len(m2.Contexts) != len(m.Contexts) {
			t.Fatalf("re-encoded frame does not round trip: %v", err)
		}
	})
}

// BenchmarkDeltaSignVerify: what signing a namespace delta costs its sender
// and checking it costs the receiver (a 600-byte delta).
func BenchmarkDeltaSignVerify(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	s := crdt.Signer{Key: priv.Public().(ed25519.PublicKey), Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }}
	nd := NamespaceDelta{Namespace: "team://x", Delta: make([]byte, 600), From: 7}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			nd.Sign(KindDeltas, s)
		}
	})
	nd.Sign(KindDeltas, s)
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if !nd.Verify(KindDeltas, s.Key) {
				b.Fatal("does not verify")
			}
		}
	})
}

// A binding id of the wrong size is refused as corrupt (an index is
// compared id by id, so a short id would match nothing and ask for all).
func TestDecodeRefusesBadBindingID(t *testing.T) {
	c := NewCodec(1 << 16)
	fr, err := c.Encode(&Message{Kind: KindBindings, BindingsSum: make([]byte, 32), BindingIDs: [][]byte{make([]byte, BindingIDSize-1)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(fr); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a short binding id decoded: %v", err)
	}
}

// A tree message round-trips with its fields, and one whose shape is off
// (no overlay, an id of the wrong size, a relayed delta of another
// namespace or without its author, tree fields on another kind) is refused
// as corrupt.
func TestTreeMessages(t *testing.T) {
	c := NewCodec(1 << 16)
	id := bytes.Repeat([]byte{5}, TreeIDSize)
	nd := NamespaceDelta{Namespace: "team://x", Delta: []byte{1, 2}, From: 9, Sig: make([]byte, 64), Author: "author"}
	good := &Message{Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 1, Round: 2, IHave: []Announcement{{ID: id, Round: 4}}, IDs: [][]byte{id}}, Deltas: []NamespaceDelta{nd}}
	fr, err := c.Encode(good)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(fr)
	if err != nil {
		t.Fatal(err)
	}
	if got.Overlay != "team://x" || got.Tree.Round != 2 || got.Tree.IHave[0].Round != 4 || !bytes.Equal(got.Tree.IHave[0].ID, id) ||
		got.Deltas[0].Author != "author" || !bytes.Equal(got.Deltas[0].RelayBytes(), nd.RelayBytes()) {
		t.Fatalf("round trip: %+v", got)
	}
	bad := map[string]*Message{
		"no overlay":      {Kind: KindTree, Tree: &Tree{Kind: 2}},
		"no tree fields":  {Kind: KindTree, Overlay: "team://x"},
		"short id":        {Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 3, IDs: [][]byte{id[:TreeIDSize-1]}}},
		"a whole sha-256": {Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 4, IDs: [][]byte{make([]byte, 32)}}},
		"short ihave":     {Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 2, IHave: []Announcement{{ID: id[:3]}}}},
		"other namespace": {Kind: KindTree, Overlay: "team://y", Tree: &Tree{Kind: 1}, Deltas: []NamespaceDelta{nd}},
		"no author":       {Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 1}, Deltas: []NamespaceDelta{{Namespace: "team://x", Delta: []byte{1}}}},
		"two deltas":      {Kind: KindTree, Overlay: "team://x", Tree: &Tree{Kind: 1}, Deltas: []NamespaceDelta{nd, nd}},
		"tree on deltas":  {Kind: KindDeltas, Overlay: "team://x", Tree: &Tree{Kind: 1}},
		"author on sync":  {Kind: KindSyncReply, Deltas: []NamespaceDelta{nd}},
	}
	for name, m := range bad {
		fr, err := c.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Decode(fr); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

// RelayBytes and ParseRelayBytes are inverses, and a truncated or
// extended encoding is refused (a tree payload is outside bytes).
func TestRelayBytes(t *testing.T) {
	nd := NamespaceDelta{Namespace: "team://x", Delta: []byte{1, 2, 3}, From: 1 << 40, Sig: bytes.Repeat([]byte{7}, 64), Author: "node"}
	b := nd.RelayBytes()
	got, err := ParseRelayBytes(b)
	if err != nil || got.Namespace != nd.Namespace || got.From != nd.From || !bytes.Equal(got.Delta, nd.Delta) || !bytes.Equal(got.Sig, nd.Sig) || got.Author != nd.Author {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i := range len(b) {
		if _, err := ParseRelayBytes(b[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v", i, err)
		}
	}
	if _, err := ParseRelayBytes(append(b[:len(b):len(b)], 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func FuzzParseRelayBytes(f *testing.F) {
	f.Add((&NamespaceDelta{Namespace: "team://x", Delta: []byte{1}, Sig: make([]byte, 64), Author: "a"}).RelayBytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseRelayBytes(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error outside ErrCorrupt: %v", err)
			}
			return
		}
		if !bytes.Equal(d.RelayBytes(), b) {
			t.Fatal("parsed relay bytes do not encode back to themselves")
		}
	})
}

// treeKind is a decoded message's tree kind as Peek reports it.
func treeKind(m *Message) uint8 {
	if m.Kind == KindTree && m.Tree != nil {
		return m.Tree.Kind
	}
	return 0
}
