// Package dedup is the duplicate-detection feature of the memory service:
// it finds near-duplicate memories across the namespaces a caller can read
// and merges them within a shared namespace. Build it with New (which
// checks its Config and builds the embeddings client once), attach it to
// one Service (memory.Config.Features), and reach it with Of; the HTTP API
// and the MCP tools do. It registers no hook: it reads the effective views
// through the core when asked, and keeps only caches keyed by content.
//
// Detection. The same knowledge often lands in two namespaces a principal
// can read: a share or promotion copies it, or two agents learn it on
// their own. Find compares every live memory the caller can read (capsule
// items and promotion references excluded) with every other in a
// different namespace, by MinHash of the title and content (package
// node/similarity: word 3-shingles, 128 hash functions, the Jaccard
// estimate); candidate pairs come from its LSH bands and a pair is
// reported at an estimate >= DefaultThreshold (0.8) unless the query or
// the Config sets another threshold. With an embeddings endpoint
// configured (Config.Embeddings, off by default; OpenAI-compatible POST
// {base}/embeddings) or an Embedder given, pairs whose cosine similarity
// is >= its threshold (default 0.9) are reported too, with method
// "embeddings"; an endpoint failure is reported as a warning and the
// MinHash pairs still answer. Detection on save is not implemented:
// detection runs when asked.
//
// Merge. Merge merges ids within one shared namespace the caller may
// write. The survivor is the first id that lives in that namespace; the
// other ids in it are soft-deleted with lineage = the survivor; ids
// elsewhere (e.g. in an agent's own namespace) are left untouched and only
// contribute provenance. The survivor's provenance gains every
// contributor's provenance, "author:<author>" of each, and "source:<id>"
// of each other id. When the contributors are independent agents — two of
// them have different authors and neither derives from the other (their
// ids, lineages and "source:" provenance do not meet) — the survivor's
// confidence rises by ConsensusBoost (0.2), capped at 1.
package dedup
