package crdt

import (
	"fmt"
	"testing"
)

// causalMetadata adds n elements then removes them all, spread over three
// replicas, and delivers every delta (in groups of up to 1000, as a peer
// queue joins them). It returns, for the ORSet and for a Map whose records
// hold the elements in a set, the encoded context bytes and the element
// dots left. Without tombstones both stay a few bytes per replica.
func causalMetadata(tb testing.TB, n int) (setCtx, setDots, mapCtx, mapDots int) {
	reps := []ReplicaID{0x9f86d081884c7d65, 0x2c26b46b68ffc68f, 0xfcde2b2edba56bf4}
	const group = 1000
	sets := []*ORSet{NewORSet(), NewORSet(), NewORSet()}
	maps := []*Map{NewMap(), NewMap(), NewMap()}
	pendS := []*ORSet{NewORSet(), NewORSet(), NewORSet()}
	pendM := []*Map{NewMap(), NewMap(), NewMap()}
	flush := func(i int) {
		for j := range reps {
			if j != i {
				sets[j].Join(pendS[i])
				maps[j].Join(pendM[i])
			}
		}
		pendS[i], pendM[i] = NewORSet(), NewMap()
	}
	elem := func(k int) (id, e string) { return fmt.Sprintf("01JDQ%021d", k%10_000), fmt.Sprintf("tag-%d", k) }
	for phase := range 2 {
		for k := range n {
			i := (k + phase) % 3 // removes come from another replica than the add
			id, e := elem(k)
			var ds *ORSet
			var dm *Map
			var err error
			if phase == 0 {
				ds, err = sets[i].Add(reps[i], e)
				if err == nil {
					dm, err = maps[i].Add(reps[i], id, "tags", e)
				}
			} else {
				ds = sets[i].Remove(e)
				dm, err = maps[i].Remove(reps[i], id, "tags", e)
			}
			if err != nil {
				tb.Fatal(err)
			}
			pendS[i].Join(ds)
			pendM[i].Join(dm)
			if k%group == group-1 {
				flush(i)
			}
		}
		for i := range reps {
			flush(i)
		}
	}
	for i := range reps {
		if string(sets[i].Encode()) != string(sets[0].Encode()) || maps[i].Digest() != maps[0].Digest() {
			tb.Fatal("replicas diverge")
		}
	}
	setDots, _, _ = sets[0].MetadataSize()
	witness := 0
	for _, id := range maps[0].EntryIDs() {
		for _, d := range maps[0].Entry(id).Dots() {
			if maps[0].Entry(id).HasElement(WitnessSet, d.Replica.String()) {
				witness++
			} else {
				mapDots++
			}
		}
	}
	// A record keeps one removal witness per replica that removed from it:
	// bounded by records × replicas, whatever the number of removes.
	if witness > len(reps)*len(maps[0].EntryIDs()) {
		tb.Fatalf("%d witness dots on %d records from %d replicas", witness, len(maps[0].EntryIDs()), len(reps))
	}
	if len(sets[0].Elements()) != 0 || maps[0].Len() != 0 {
		tb.Fatalf("%d elements and %d records left after removing everything", len(sets[0].Elements()), maps[0].Len())
	}
	return len(sets[0].Context().Encode()), setDots, len(maps[0].Context().Encode()), mapDots
}

// TestCausalMetadataBounded: 100k adds then 100k removes leave under 1 KiB of
// causal metadata (context plus element dots, ~10 bytes a dot encoded). A
// Map's records also keep one removal witness per removing replica (see
// WitnessSet), checked against its bound in causalMetadata.
func TestCausalMetadataBounded(t *testing.T) {
	n := 100_000
	if testing.Short() || raceEnabled {
		n = 10_000 // the 100k run is the default build and BenchmarkCausalMetadata
	}
	setCtx, setDots, mapCtx, mapDots := causalMetadata(t, n)
	t.Logf("%d adds, %d removes; ORSet: context %d B, %d element dots; Map: context %d B, %d element dots", n, n, setCtx, setDots, mapCtx, mapDots)
	if setCtx+10*setDots >= 1024 || mapCtx+10*mapDots >= 1024 {
		t.Fatalf("causal metadata grew with removes: ORSet %d B + %d dots, Map %d B + %d dots", setCtx, setDots, mapCtx, mapDots)
	}
}
