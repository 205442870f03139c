package crdt

import "fmt"

// Limits bound what a decoder accepts and what an Edit writes. Zero fields
// take the defaults of DefaultLimits.
type Limits struct {
	MaxBytes    int // whole encoding; default 16 MiB
	MaxValue    int // one field value; default 1 MiB
	MaxString   int // one id or set element; default 512 bytes
	MaxName     int // one field or set name; default 64 bytes
	MaxRecords  int // record entries plus retracted ids; default 1<<20
	MaxReplicas int // distinct replicas; default 1<<16
	MaxDots     int // dots in the store and cloud; default 1<<22
}

// DefaultLimits returns the limits used when none are configured.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:    16 << 20,
		MaxValue:    1 << 20,
		MaxString:   512,
		MaxName:     64,
		MaxRecords:  1 << 20,
		MaxReplicas: 1 << 16,
		MaxDots:     1 << 22,
	}
}

// withDefaults fills zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxValue <= 0 {
		l.MaxValue = d.MaxValue
	}
	if l.MaxString <= 0 {
		l.MaxString = d.MaxString
	}
	if l.MaxName <= 0 {
		l.MaxName = d.MaxName
	}
	if l.MaxRecords <= 0 {
		l.MaxRecords = d.MaxRecords
	}
	if l.MaxReplicas <= 0 {
		l.MaxReplicas = d.MaxReplicas
	}
	if l.MaxDots <= 0 {
		l.MaxDots = d.MaxDots
	}
	return l
}

func (l Limits) checkID(id string) error {
	l = l.withDefaults()
	if len(id) == 0 || len(id) > l.MaxString {
		return fmt.Errorf("%w: id must be 1..%d bytes, got %d", ErrInvalid, l.MaxString, len(id))
	}
	return nil
}

func (l Limits) checkName(name string) error {
	l = l.withDefaults()
	if len(name) == 0 || len(name) > l.MaxName {
		return fmt.Errorf("%w: name must be 1..%d bytes, got %d", ErrInvalid, l.MaxName, len(name))
	}
	return nil
}
