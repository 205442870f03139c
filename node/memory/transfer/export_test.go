package transfer

import "time"

// ExportFormat is the "format" of a mnemo export.
const ExportFormat = exportFormat

// MaxSkew is the bound on imported times ahead of the node's clock.
func (t *Transfer) MaxSkew() time.Duration { return t.core.MaxSkew() }
