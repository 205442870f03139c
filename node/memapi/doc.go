// Package memapi is the node's API without the node: the request and
// response types of every memory operation, the limits a request is held
// to, and the error sentinels the operations return. No storage stands
// behind it, so the HTTP client (node/client), the MCP tools
// (node/mcptools) and the CLI speak the API without linking Badger, QUIC
// or memberlist.
//
// node/memory implements the operations on a memory.Service and re-exports
// these names (memory.SaveRequest is memapi.SaveRequest), so the sentinels
// are the same values on both sides: errors.Is(err, memapi.ErrNotFound)
// holds for an error from a Service in this process and for one the HTTP
// client decoded from a node's answer alike.
//
// The types are JSON in snake_case, as the HTTP API and the MCP tools carry
// them. What a field means for storage, access and replication is written
// where the Service acts on it, in node/memory.
package memapi
