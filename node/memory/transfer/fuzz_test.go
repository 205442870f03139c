package transfer_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/transfer"
)

// FuzzImport feeds arbitrary bytes to Import: it must never panic, a
// rejected body must change nothing, and an accepted one imported again must
// skip everything.
func FuzzImport(f *testing.F) {
	if b, err := os.ReadFile("testdata/engram-export.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"format":"mnemo-export","version":1,"memories":[{"id":"01M6BFP5G09GHA3HRM28BH5BT8","type":"note","content":"hi","scope":"project","created_at":"2026-01-01T00:00:00Z","deleted_at":"2026-01-02T00:00:00Z","tags":["a"]}],"sessions":[{"id":"s1","started_at":"2026-01-01T00:00:00Z","summary":"x"}]}`))
	f.Add([]byte(`{"observations":[{"id":1,"type":"x","content":"c","created_at":"2026-01-01 00:00:00","scope":"personal","topic_key":"k"}],"prompts":[{"id":2,"content":"p","created_at":"2026-01-01"}],"sessions":[{"id":"s","started_at":"bad"}]}`))
	f.Add([]byte(`{"observations":null}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1,2]`))

	clk := &memorytest.Clock{T: memorytest.Start}
	alice := namespace.MustParse("agent://alice")
	c := memapi.Caller{Principal: alice}
	var s *memory.Service
	reopen := func() {
		if s != nil {
			s.Close()
		}
		var err error
		if s, err = memory.Open(memory.Config{Agent: alice, Now: clk.Now, Features: []memory.Feature{transfer.New()}}); err != nil {
			f.Fatal(err)
		}
		memorytest.Save(f, s, c, memapi.SaveRequest{Content: "present before every import", TopicKey: "k"})
	}
	reopen()
	f.Cleanup(func() { s.Close() })

	f.Fuzz(func(t *testing.T, data []byte) {
		if st, _ := s.Stats(context.Background(), c, ""); st.Memories+st.Deleted > 500 {
			reopen() // keep the per-input snapshot cheap
		}
		ctx := context.Background()
		before := memorytest.Snapshot(t, s, c)
		res, err := transfer.Of(s).Import(ctx, c, "", data)
		if err != nil {
			if after := memorytest.Snapshot(t, s, c); after != before {
				t.Fatalf("failed import (%v) changed the state", err)
			}
			return
		}
		if res.Format != "mnemo-export" && res.Format != "engram" {
			t.Fatalf("accepted as format %q", res.Format)
		}
		if !json.Valid(data) {
			t.Fatal("accepted a body that is not JSON")
		}
		mid := memorytest.Snapshot(t, s, c)
		again, err := transfer.Of(s).Import(ctx, c, "", data)
		if err != nil {
			t.Fatalf("second import of an accepted body: %v", err)
		}
		if again.Memories != 0 || again.Sessions != 0 || again.Prompts != 0 || again.Skipped != res.Memories+res.Sessions+res.Prompts+res.Skipped {
			t.Fatalf("second import %+v after %+v", again, res)
		}
		if memorytest.Snapshot(t, s, c) != mid {
			t.Fatal("second import changed the state")
		}
	})
}
