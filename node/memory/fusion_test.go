package memory

import (
	"slices"
	"testing"

	"github.com/mnemohq/mnemo/node/search"
)

func TestFuseReciprocalRanks(t *testing.T) {
	lex := []search.Hit{{ID: "a", Score: 9}, {ID: "b", Score: 5}, {ID: "c", Score: 1}}
	other := []string{"c", "d", "a", "d"}
	got := fuse(lex, other, 60, 10)
	var ids []string
	for _, h := range got {
		ids = append(ids, h.ID)
	}
	// a: 1/61+1/63; c: 1/63+1/61 (tie with a: a ranks better lexically);
	// b: 1/62; d: 1/62 (tie with b: b has a lexical rank, d none).
	if want := []string{"a", "c", "b", "d"}; !slices.Equal(ids, want) {
		t.Fatalf("fused order %v, want %v", ids, want)
	}
	if w := 1.0/61 + 1.0/63; got[0].Score != w {
		t.Fatalf("fused score %v, want %v", got[0].Score, w)
	}
	if cut := fuse(lex, other, 60, 2); len(cut) != 2 || cut[1].ID != "c" {
		t.Fatalf("limit 2: %v", cut)
	}
	if n := overlap(lex, other); n != 2 {
		t.Fatalf("overlap %d, want 2", n)
	}
	// k weighs the top of a list: with k = 0 the first places dominate.
	if ids := fuse([]search.Hit{{ID: "x"}, {ID: "y"}, {ID: "z"}}, []string{"z"}, 0, 3); ids[0].ID != "z" {
		t.Fatalf("k 0: %v", ids)
	}
}
