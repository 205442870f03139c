package memory

import (
	"context"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/search"
	"github.com/mnemohq/mnemo/node/store"
)

// BenchmarkSearch100kEdits is BenchmarkSearch100k with 100k approved edits
// present (one per memory: attenuate, amend of the importance, block,
// and 1 in 20 quarantined), written in bulk and then reopened, so the
// edit map and the index are rebuilt from the store as on a restart.
// Compare its p95 with BenchmarkSearch100k's:
//
//	go test -run XXX -bench 'Search100k' -benchtime 2000x ./node/memory/
func BenchmarkSearch100kEdits(b *testing.B) {
	s, c := loaded(b, 100_000, 7)
	dir := s.cfg.Dir
	caller := Caller{Principal: benchAgent}
	metas := s.ix.List(search.Filter{Namespaces: []string{benchAgent.String()}, Subtree: true}, false, 0)
	start := time.Now()
	for lo := 0; lo < len(metas); lo += 1000 {
		err := s.write(func(tx *store.Tx) error {
			for i := lo; i < min(lo+1000, len(metas)); i++ {
				d, imp := -0.1, 0.7
				req := EditRequest{TargetID: metas[i].ID, Reason: "bench", Op: OpAttenuate, Patch: EditPatch{ImportanceDelta: &d}}
				switch i % 20 {
				case 1, 2, 3, 4, 5:
					req.Op, req.Patch = OpAmend, EditPatch{Importance: &imp}
				case 6, 7, 8:
					req.Op, req.Patch = OpBlock, EditPatch{Channel: "team"}
				case 9:
					req.Op, req.Patch = OpQuarantine, EditPatch{}
				}
				_, ts := s.now()
				body := editBody{Version: sealVersion, Namespace: metas[i].Namespace, Target: req.TargetID, Op: req.Op, Reason: req.Reason,
					Proposer: caller.Principal.String(), Key: s.acl.id.Public, Importance: req.Patch.Importance,
					Delta: req.Patch.ImportanceDelta, Channel: req.Patch.Channel, TS: uint64(ts)}
				enc, eid, err := seal(s.acl.id, editDomain, &body, func(sig []byte) any { return &sealedEdit{Body: body, Sig: sig} })
				if err != nil {
					return err
				}
				if err := putSealed(tx, metas[i].Namespace, schema.EditPrefix+eid, schema.KindEdit, schema.FieldEdit, enc, ts); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("wrote %d edits in %v", len(metas), time.Since(start).Round(time.Millisecond))
	s.Close()
	start = time.Now()
	s = openBench(b, dir, false)
	b.Logf("reopened with edits (index and edit map rebuilt) in %v", time.Since(start).Round(time.Millisecond))
	b.Cleanup(func() { s.Close() })
	if au, _ := s.Audit(context.Background(), caller, AuditQuery{Status: StatusApproved}); len(au.Edits) != len(metas) {
		b.Fatalf("audit holds %d edits", len(au.Edits))
	}
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = c.query()
	}
	ctx := context.Background()
	var lat []time.Duration
	hits := 0
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		t0 := time.Now()
		res, err := s.Search(ctx, caller, SearchQuery{Query: q})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		hits += len(res.Results)
		for _, h := range res.Results {
			if h.Memory.EditsApplied != 1 {
				b.Fatalf("hit %s without its edit", h.Memory.ID)
			}
		}
	}
	b.ReportMetric(us(percentile(lat, 0.50)), "p50-µs")
	b.ReportMetric(us(percentile(lat, 0.95)), "p95-µs")
	b.ReportMetric(float64(hits)/float64(len(lat)), "hits/op")
}
