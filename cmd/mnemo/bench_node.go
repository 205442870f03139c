package main

import (
	"context"
	"os"

	"github.com/mnemohq/mnemo/node"
)

// benchNode is the throwaway node every bench verb measures: a real node
// (Badger, every commit synced, as "mnemo node" runs it) on a data
// directory, serving its HTTP API on a free loopback port.
type benchNode struct {
	*node.Node
	stop   func()
	served chan error
	tmp    string // removed by close; "" when the caller named the directory
}

// openBenchNode opens and serves a node on dir, or on a new temporary
// directory when dir is "" (removed again by close). The caller must call
// close.
func openBenchNode(ctx context.Context, dir string) (*benchNode, error) {
	b := &benchNode{served: make(chan error, 1)}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "mnemo-bench-")
		if err != nil {
			return nil, err
		}
		dir, b.tmp = tmp, tmp
	}
	n, err := node.Open(node.Config{Dir: dir, HTTPAddr: "127.0.0.1:0", Agent: "bench"})
	if err != nil {
		if b.tmp != "" {
			os.RemoveAll(b.tmp)
		}
		return nil, err
	}
	b.Node = n
	sctx, stop := context.WithCancel(ctx)
	b.stop = stop
	go func() { b.served <- n.Serve(sctx) }()
	return b, nil
}

// close stops the node, waits until it has shut down, and removes a
// temporary data directory.
func (b *benchNode) close() {
	b.stop()
	<-b.served
	if b.tmp != "" {
		os.RemoveAll(b.tmp)
	}
}
