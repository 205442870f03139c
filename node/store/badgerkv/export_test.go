package badgerkv

import "github.com/dgraph-io/badger/v4/options"

// CompressionOf is the compression Badger writes k's tables with.
func CompressionOf(k *KV) options.CompressionType { return k.db.Opts().Compression }
