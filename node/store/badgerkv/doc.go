// Package badgerkv is the store.KV of a node: Badger in the node's data
// directory, tuned for a sidecar (small memtables and caches, values over
// 64 KiB in the value log, snappy compression) and synced on every commit, so
// an acknowledged write survives kill -9.
//
// It owns what belongs to the directory: Open creates it, takes its lock
// (mnemo.lock, holding the pid) so that a second process fails with
// store.ErrLocked naming the holder before Badger is touched, and Close
// releases it. ReleaseFilePages takes the pages of Badger's mapped files
// out of the process's resident set and leaves them in the kernel's page
// cache (store.Store.ReleaseFilePages finds it; pages_linux.go says why
// not evict them).
//
// It lives apart from node/store so that the memory core, its features and
// the cluster loop, which take a store.KV, link no Badger: the simulator runs
// them over store.MemKV. Only the node binary opens it:
//
//	kv, err := badgerkv.Open(dir, badgerkv.Options{Logger: log})
//	...
//	svc, err := memory.Open(memory.Config{KV: kv, ...})
//
// TestBackendsAgree checks it against store.MemKV on seeded histories.
package badgerkv
