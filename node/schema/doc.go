// Package schema is the one definition of how a memory and the node's other
// record kinds are stored as crdt.Records: the field and set names, the
// record kinds and the ids and id prefixes that mark them, and the
// conversions between a record and the API's types (node/memapi). The
// memory service (node/memory) and the cluster simulator (sim) both write
// through it, so a simulated record has the node's shape, and a grep for a
// field's short name finds one definition.
//
// A memory's scalar fields are LWW registers, its tags, linked files and
// provenance add-wins sets; numbers and times are stored as decimal text
// (EncodeNum, EncodeTime). Every edit of a record writes updated_at (Touch):
// each change then adds a dot to its record, and digest sync finds changed
// records by their dots (sync/replica/doc.go).
//
// The short names are part of the stored and replicated format: never
// rename one. The package is pure (crdt, namespace and memapi only), so
// anything may use it without linking storage or transport.
package schema
