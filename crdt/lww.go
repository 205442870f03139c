package crdt

import "bytes"

// LWW is a last-writer-wins register ordered by (timestamp, replica id), with
// the value bytes as the final tie-break so equal keys still resolve the same
// everywhere. The zero value is an empty register.
type LWW struct {
	TS      Timestamp
	Replica ReplicaID
	Value   []byte
}

// Less reports whether l is overwritten by o.
func (l LWW) Less(o LWW) bool {
	if l.TS != o.TS {
		return l.TS < o.TS
	}
	if l.Replica != o.Replica {
		return l.Replica < o.Replica
	}
	return bytes.Compare(l.Value, o.Value) < 0
}

// Set writes value at ts by replica r and returns the delta (joined into l).
func (l *LWW) Set(ts Timestamp, r ReplicaID, value []byte) LWW {
	d := LWW{TS: ts, Replica: r, Value: bytes.Clone(value)}
	l.Join(d)
	return d
}

// Join keeps the larger of the two writes.
func (l *LWW) Join(o LWW) {
	if l.Less(o) {
		*l = o
	}
}
