// Package badgerkvtest opens the storage of a test memory service: Badger
// in a directory, as on a node. It is for tests only; node/memory's own
// fixtures (node/memory/memorytest) cannot hold it, since the memory core
// and its features link no Badger.
package badgerkvtest

import (
	"testing"

	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// In is Badger in dir, or for dir "" nil: the memory service's default,
// an in-memory store.MemKV. It fails the test if Badger does not open.
func In(t testing.TB, dir string) store.KV {
	t.Helper()
	if dir == "" {
		return nil
	}
	kv, err := badgerkv.Open(dir, badgerkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
