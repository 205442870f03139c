// Package transfer is the export and import feature of the memory service:
// a whole dump of what a caller can read, and the restore of such a dump or
// of an engram export. Build it with New, attach it to one Service
// (memory.Config.Features) and reach it with Of; the HTTP API does
// (GET /v1/export, POST /v1/import). It registers no hook: it owns no
// record kind and keeps nothing but the Core.
//
// Export. Export returns every memory the caller can read — soft-deleted
// and quarantined ones included, so an import reproduces them — and every
// session in those namespaces, as a memapi.Export ("format":"mnemo-export",
// version 1).
//
// Import. ImportWith reads a mnemo export or an engram export (`engram
// export` JSON: sessions, observations, prompts) into the caller's
// namespace, or the one the options name: all of it, or nothing if any
// item is invalid. Items already present (same id, or retracted there) are
// skipped, so importing twice is harmless; engram items get ids derived
// from their keys, so they are skipped the same way. Everything is checked
// before the first write; the writes then go in transactions of at most
// importChunk items (Badger bounds a transaction's size), so only an I/O
// failure can stop an import midway, and running it again completes it.
//
// Trust. What a file may claim is bounded, since it comes from outside: the
// importer is the author of every memory unless the node's owner asks
// PreserveProvenance (and, in a namespace that replicates, even then only
// an author this node hosts stays the author: peers refuse a record whose
// author another node hosts, so a foreign author is kept in provenance as
// "author:NAME"); a memory id must be a mnemo id (26 characters of the id
// alphabet, so never a reserved record prefix nor a path) that no memory
// of another namespace uses; and no time may lie further ahead of this
// node's clock than the skew it tolerates from peers (crdt's clock bound):
// a record dated years ahead would sort first in every timeline and escape
// every age-based rule until then. Each refusal is memapi.ErrInvalid naming
// the record; a refusal by the policy is acl.ErrDenied.
package transfer
