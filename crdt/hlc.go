package crdt

import (
	"fmt"
	"time"
)

// Timestamp is a hybrid logical clock reading: milliseconds since the Unix
// epoch in the high 48 bits and a logical counter in the low 16. Timestamps
// compare as plain integers.
type Timestamp uint64

const logicalBits = 16

// MakeTimestamp packs a wall time in milliseconds and a logical counter.
func MakeTimestamp(wallMillis int64, logical uint16) Timestamp {
	if wallMillis < 0 {
		wallMillis = 0
	}
	return Timestamp(uint64(wallMillis)<<logicalBits | uint64(logical))
}

// WallMillis is the physical part in milliseconds since the Unix epoch.
func (t Timestamp) WallMillis() int64 { return int64(t >> logicalBits) }

// Logical is the logical counter.
func (t Timestamp) Logical() uint16 { return uint16(t) }

// Time is the physical part as a time.Time.
func (t Timestamp) Time() time.Time { return time.UnixMilli(t.WallMillis()).UTC() }

func (t Timestamp) String() string {
	return fmt.Sprintf("%d.%d", t.WallMillis(), t.Logical())
}

// DefaultMaxSkew is the forward skew a Clock tolerates when none is given.
const DefaultMaxSkew = time.Minute

// Clock is a hybrid logical clock. It is monotonic even when the wall clock
// steps back, and it refuses (rather than adopts) a remote timestamp further
// than MaxSkew ahead of the local wall time. A Clock is not safe for
// concurrent use; the owner serialises calls.
type Clock struct {
	last    Timestamp
	maxSkew time.Duration
}

// NewClock returns a clock that rejects remote timestamps more than maxSkew
// ahead of the wall time passed to Observe. maxSkew <= 0 means DefaultMaxSkew.
func NewClock(maxSkew time.Duration) *Clock {
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	return &Clock{maxSkew: maxSkew}
}

// MaxSkew is the forward skew this clock tolerates.
func (c *Clock) MaxSkew() time.Duration { return c.maxSkew }

// Last is the latest timestamp issued or observed.
func (c *Clock) Last() Timestamp { return c.last }

// Restore raises the clock to at least ts, for a node restarting from
// persisted state. It never moves the clock back.
func (c *Clock) Restore(ts Timestamp) {
	if ts > c.last {
		c.last = ts
	}
}

// Now is a local or send event at the given wall time: a timestamp strictly
// greater than every one this clock issued or observed before.
func (c *Clock) Now(wall time.Time) Timestamp {
	pt := MakeTimestamp(wall.UnixMilli(), 0)
	if pt > c.last {
		c.last = pt
	} else {
		c.last = next(c.last)
	}
	return c.last
}

// Observe is a receive event: it checks remote against the skew bound and,
// if acceptable, advances the clock past both remote and the wall time. On
// ErrClockSkew the clock is unchanged.
func (c *Clock) Observe(remote Timestamp, wall time.Time) (Timestamp, error) {
	if err := c.Check(remote, wall); err != nil {
		return c.last, err
	}
	pt := MakeTimestamp(wall.UnixMilli(), 0)
	m := max(c.last, remote)
	if pt > m {
		c.last = pt
	} else {
		c.last = next(m)
	}
	return c.last, nil
}

// Check reports ErrClockSkew if remote is more than MaxSkew ahead of wall. It
// changes nothing; callers validating a whole delta check its largest
// timestamp before applying any of it.
func (c *Clock) Check(remote Timestamp, wall time.Time) error {
	// Compared in milliseconds: a Duration (ns) overflows for a remote
	// timestamp some 292 years ahead, which must be rejected too.
	ahead := remote.WallMillis() - wall.UnixMilli()
	if ahead > c.maxSkew.Milliseconds() {
		return fmt.Errorf("%w: %d ms ahead (max %v)", ErrClockSkew, ahead, c.maxSkew)
	}
	return nil
}

// next is the smallest timestamp after t; the logical counter carries into
// the physical part instead of wrapping.
func next(t Timestamp) Timestamp { return t + 1 }
