package badgerkv

import "github.com/dgraph-io/badger/v4/options"

// CompressionOf is the compression Badger writes k's tables with.
func CompressionOf(k *KV) options.CompressionType { return k.db.Opts().Compression }

// Caches reports whether k's Badger keeps a block cache and an index cache.
func Caches(k *KV) (block, index bool) {
	return k.db.BlockCacheMetrics() != nil, k.db.IndexCacheMetrics() != nil
}

// SetFsync replaces the function k's Sync syncs each log file with.
func SetFsync(k *KV, fsync func(path string) error) { k.fsync = fsync }

// IndexBytes is the size of k's tables' indexes (block offsets and bloom
// filters) and how many tables there are.
func IndexBytes(k *KV) (bytes int64, tables int) {
	for _, t := range k.db.Tables() {
		bytes += int64(t.IndexSz)
		tables++
	}
	return bytes, tables
}
