package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// newLogBridge returns a *log.Logger for memberlist that forwards each line
// to l at the level memberlist wrote in its "[LEVEL]" prefix.
// slog.NewLogLogger would put every line at one level: either the
// per-connection DEBUG chatter floods Info, or the WARN and ERR lines
// (failed probes, rejected members) hide at Debug.
func newLogBridge(l *slog.Logger) *log.Logger {
	return log.New(logWriter{l}, "", 0)
}

type logWriter struct{ l *slog.Logger }

var logLevels = []struct {
	prefix string
	level  slog.Level
}{
	{"[DEBUG]", slog.LevelDebug},
	{"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn},
	{"[ERR]", slog.LevelError},
	{"[ERROR]", slog.LevelError},
}

func (w logWriter) Write(p []byte) (int, error) {
	msg := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, ll := range logLevels {
		if rest, ok := bytes.CutPrefix(msg, []byte(ll.prefix)); ok {
			level, msg = ll.level, bytes.TrimSpace(rest)
			break
		}
	}
	if w.l.Enabled(context.Background(), level) {
		w.l.Log(context.Background(), level, string(msg))
	}
	return len(p), nil
}
