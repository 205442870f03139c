// Package client talks to a running node's HTTP JSON API (package httpapi).
//
//	c, err := client.New("http://127.0.0.1:7070", token)
//	res, err := c.Save(ctx, memory.SaveRequest{Type: "decision", Content: "…"})
//
// Typed methods mirror the routes one to one and decode the answers into
// package memory's types. Raw performs any request and returns the body as
// the node sent it, for callers that print the API's own JSON.
//
// An answer with an error status becomes an *Error carrying the status, the
// API's code and its message. *Error unwraps to the matching sentinel of
// package memory (invalid_request → memory.ErrInvalid, not_found →
// memory.ErrNotFound, conflict → memory.ErrConflict, too_large →
// memory.ErrTooLarge) or acl.ErrDenied (permission_denied), so
// errors.Is works the same against a local Service and a remote one.
// Failing to reach the node at all wraps ErrUnreachable.
package client
