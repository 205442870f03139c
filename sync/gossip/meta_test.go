package gossip

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/mnemohq/mnemo/acl"
)

func TestMetaRoundTripAndTruncation(t *testing.T) {
	m := newMeta(t, "alice", "bob")
	b, kept, err := encodeMeta(m, false)
	if err != nil || kept != 2 {
		t.Fatalf("encode: kept %d, %v", kept, err)
	}
	t.Logf("metadata with 2 agents: %d bytes", len(b))
	got, _, err := decodeMeta(string(m.NodeID), b)
	if err != nil {
		t.Fatal(err)
	}
	if got.NodeID != m.NodeID || !got.PublicKey.Equal(m.PublicKey) || got.QUICAddr != m.QUICAddr || !slices.Equal(got.Agents, m.Agents) {
		t.Fatalf("round trip: %+v, want %+v", got, m)
	}

	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("agent-%014d", i)) // 20 bytes
	}
	m.Agents = many
	b, kept, err = encodeMeta(m, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("100 agents of 20 bytes: kept %d in %d bytes", kept, len(b))
	if len(b) > MaxMetaBytes || kept == 0 || kept >= len(many) {
		t.Fatalf("kept %d agents in %d bytes", kept, len(b))
	}
	got, _, err = decodeMeta(string(m.NodeID), b)
	if err != nil || !slices.Equal(got.Agents, many[:kept]) {
		t.Fatalf("truncated list is not a prefix: %v %v", got.Agents, err)
	}
	// One more agent would not have fit.
	if more, _ := msgpack.Marshal(&wireMeta{V: metaVersion, ID: string(m.NodeID), K: m.PublicKey, Q: m.QUICAddr, A: many[:kept+1]}); len(more) <= MaxMetaBytes {
		t.Fatalf("kept %d agents but %d fit", kept, kept+1)
	}

	m.Agents = nil
	m.QUICAddr = strings.Repeat("h", 600) + ":1"
	if _, _, err := encodeMeta(m, false); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("oversized address: %v, want ErrMetaTooLarge", err)
	}
}

// The incarnation travels in the metadata and is part of the member's
// name: metadata gossiped under another incarnation's name is refused.
func TestMetaIncarnationNamesTheMember(t *testing.T) {
	m := newMeta(t)
	m.Incarnation = 0x1874a2b3c4d5e6f7
	b, _, err := encodeMeta(m, false)
	if err != nil {
		t.Fatal(err)
	}
	name := MemberName(m.NodeID, m.Incarnation)
	if name != string(m.NodeID)+"-1874a2b3c4d5e6f7" {
		t.Fatalf("member name %q", name)
	}
	got, _, err := decodeMeta(name, b)
	if err != nil || got.Incarnation != m.Incarnation {
		t.Fatalf("decode: %+v, %v", got, err)
	}
	for _, wrong := range []string{string(m.NodeID), MemberName(m.NodeID, m.Incarnation+1), MemberName(newMeta(t).NodeID, m.Incarnation)} {
		if _, _, err := decodeMeta(wrong, b); !errors.Is(err, ErrIdentity) {
			t.Errorf("metadata of %s gossiped as %s: %v, want ErrIdentity", name, wrong, err)
		}
	}
	// Incarnation zero is the plain node id, as before incarnations.
	if MemberName(m.NodeID, 0) != string(m.NodeID) {
		t.Fatalf("incarnation 0 named %q", MemberName(m.NodeID, 0))
	}
}

func TestCheckBounds(t *testing.T) {
	for _, v := range []any{
		nil, true, 1, -1, 300, -300, 1 << 40, 1.5, float32(2.5), "s", strings.Repeat("x", 300),
		[]byte{1, 2}, []any{1, "a", []any{nil}}, map[string]any{"a": 1, "b": []int{1, 2}},
		msgpack.RawMessage{0xd4, 1, 2}, // fixext1
	} {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkBounds(b); err != nil {
			t.Errorf("%#v encoded as %x: %v", v, b, err)
		}
		if len(b) > 1 {
			if err := checkBounds(b[:len(b)-1]); err == nil {
				t.Errorf("%#v truncated to %x accepted", v, b[:len(b)-1])
			}
		}
		if err := checkBounds(append(b, 0)); err == nil {
			t.Errorf("%#v with a trailing byte accepted", v)
		}
	}
	for _, b := range [][]byte{
		{0xc1},                         // never used
		{0xdb, 0xff, 0xff, 0xff, 0xff}, // str32 of 4 GiB
		{0xdd, 0x00, 0x10, 0x00, 0x00}, // array32 of a million
		{0xdf, 0x00, 0x00, 0x00, 0x01}, // map32 of one pair, no bytes
	} {
		if err := checkBounds(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x: %v, want ErrCorrupt", b, err)
		}
	}
}

// FuzzDecodeMeta checks the decoder of gossiped bytes: it never panics,
// whatever it accepts re-encodes to metadata it accepts again with the same
// content, and it accepts nothing with a key not deriving the name.
func FuzzDecodeMeta(f *testing.F) {
	id, err := acl.IdentityFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	good, _, err := encodeMeta(Meta{PublicKey: id.Public, QUICAddr: "10.0.0.1:7947", Agents: []string{"a", "b"}}, false)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x81, 0xa1, 'a', 0xdd, 0x7f, 0xff, 0xff, 0xff})
	f.Add(good[:len(good)-3])
	name := string(id.NodeID())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, leaving, err := decodeMeta(name, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrIdentity) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrIdentity", err)
			}
			return
		}
		if m.NodeID != acl.NodeIDOf(m.PublicKey) || string(m.NodeID) != name {
			t.Fatalf("accepted %s with a key deriving %s", m.NodeID, acl.NodeIDOf(m.PublicKey))
		}
		again, kept, err := encodeMeta(m, leaving)
		if err != nil || kept != len(m.Agents) {
			t.Fatalf("re-encode: kept %d of %d, %v", kept, len(m.Agents), err)
		}
		back, backLeaving, err := decodeMeta(name, again)
		if err != nil || backLeaving != leaving || back.QUICAddr != m.QUICAddr || !slices.Equal(back.Agents, m.Agents) {
			t.Fatalf("re-decode: %+v, %v", back, err)
		}
	})
}

func TestClusterKeyFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gen := GenerateClusterKey()
	key, err := LoadClusterKey(write("generated", gen+"\n"))
	if err != nil || len(key) != 32 {
		t.Fatalf("generated key: %d bytes, %v", len(key), err)
	}
	if GenerateClusterKey() == gen {
		t.Fatal("two generated keys are equal")
	}
	for _, size := range []int{16, 24, 32} {
		text := "  " + string(bytes.Repeat([]byte("A"), size*4/3)) // all-zero key, padded below
		k, err := ParseClusterKey([]byte(fixPadding(text, size) + "\n"))
		if err != nil || len(k) != size {
			t.Errorf("%d-byte key: %d bytes, %v", size, len(k), err)
		}
	}
	for name, text := range map[string]string{
		"empty":     "\n",
		"20 bytes":  "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
		"64 bytes":  strings.Repeat("A", 86) + "==",
		"not b64":   "this is not base64 at all!!!",
		"url alpha": "-_-_-_-_-_-_-_-_-_-_-w==",
	} {
		_, err := LoadClusterKey(write(strings.ReplaceAll(name, " ", "_"), text))
		if !errors.Is(err, ErrBadClusterKey) {
			t.Errorf("%s: %v, want ErrBadClusterKey", name, err)
			continue
		}
		if strings.Contains(err.Error(), strings.TrimSpace(text)) && strings.TrimSpace(text) != "" {
			t.Errorf("%s: the error quotes the key file: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	if _, err := LoadClusterKey(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

// fixPadding returns the standard base64 of size zero bytes (text is only
// there to carry leading white space).
func fixPadding(text string, size int) string {
	lead := text[:len(text)-len(strings.TrimLeft(text, " "))]
	enc := strings.Repeat("A", (size/3)*4)
	switch size % 3 {
	case 1:
		enc += "AA=="
	case 2:
		enc += "AAA="
	}
	return lead + enc
}
