package badgerkv_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// TestReadsTablesWrittenCompressed: a data directory whose tables an
// earlier version wrote with snappy or zstd (Open now writes them
// uncompressed) opens and reads back every value, before and after new
// writes.
func TestReadsTablesWrittenCompressed(t *testing.T) {
	for name, c := range map[string]options.CompressionType{"snappy": options.Snappy, "zstd": options.ZSTD} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := badger.Open(badger.DefaultOptions(dir).WithCompression(c).WithLogger(nil))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			err = db.Update(func(txn *badger.Txn) error {
				for i := range 500 {
					k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("value %d of a record, long enough to compress %[1]d %[1]d %[1]d", i)
					want[k] = v
					if err := txn.Set([]byte(k), []byte(v)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil { // writes the memtable as a compressed table
				t.Fatal(err)
			}
			if tables, _ := filepath.Glob(filepath.Join(dir, "*.sst")); len(tables) == 0 {
				t.Fatal("no table written")
			}
			kv := mustOpen(t, dir)
			defer kv.Close()
			if got := badgerkv.CompressionOf(kv); got != options.None {
				t.Fatalf("Open writes tables with compression %v, want none", got)
			}
			check := func() {
				t.Helper()
				err := kv.View(func(r store.Reader) error {
					for k, v := range want {
						got, err := r.Get([]byte(k))
						if err != nil {
							return fmt.Errorf("%s: %w", k, err)
						}
						if string(got) != v {
							return fmt.Errorf("%s = %q, want %q", k, got, v)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			check()
			if err := kv.Update(func(w store.Writer) error { return w.Set([]byte("new"), []byte("uncompressed")) }); err != nil {
				t.Fatal(err)
			}
			want["new"] = "uncompressed"
			check()
		})
	}
}

// TestNoCachesByDefault: Open keeps neither Badger's block cache nor its
// index cache (uncompressed, unencrypted tables are read in place from
// their mappings; badgerkv.go, Open), unless a block cache is asked for.
func TestNoCachesByDefault(t *testing.T) {
	for _, tc := range []struct {
		size  int64
		block bool
	}{{0, false}, {-1, false}, {1 << 20, true}} {
		k, err := badgerkv.Open(t.TempDir(), badgerkv.Options{BlockCacheSize: tc.size})
		if err != nil {
			t.Fatal(err)
		}
		block, index := badgerkv.Caches(k)
		k.Close()
		if block != tc.block || index {
			t.Errorf("BlockCacheSize %d: block cache %v, index cache %v; want %v, false", tc.size, block, index, tc.block)
		}
	}
}
