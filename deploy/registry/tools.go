//go:build tools

// Pins the registry command for `go build` (see build.sh).
package tools

import _ "github.com/distribution/distribution/v3/cmd/registry"
