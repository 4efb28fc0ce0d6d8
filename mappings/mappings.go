// Package mappings holds the Elasticsearch index definitions (settings and
// mappings) of the scale backend as JSON files, embedded in the binary. Each
// file carries its version in mappings._meta.version; indices are named
// <namespace>-<kind>-v<version>-<suffix> and read and written only through
// the alias <namespace>-<kind>. Changing a file means raising its version
// and running `noticesd reindex` (docs/elasticsearch.md).
package mappings

import (
	"embed"
	"encoding/json"
	"fmt"
)

//go:embed notices.json register.json
var files embed.FS

// Index is one index definition.
type Index struct {
	// Kind is "notices" or "register": the alias suffix and file name.
	Kind string
	// Version is mappings._meta.version of the file.
	Version int
	// Body is the file, the body of a create-index request.
	Body []byte
}

// Kinds of index.
const (
	Notices  = "notices"
	Register = "register"
)

// Load returns the definition of one kind of index.
func Load(kind string) (Index, error) {
	body, err := files.ReadFile(kind + ".json")
	if err != nil {
		return Index{}, fmt.Errorf("mappings: no index definition %q: %w", kind, err)
	}
	var doc struct {
		Mappings struct {
			Dynamic string `json:"dynamic"`
			Meta    struct {
				Version int `json:"version"`
			} `json:"_meta"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Index{}, fmt.Errorf("mappings: %s.json: %w", kind, err)
	}
	if doc.Mappings.Meta.Version < 1 {
		return Index{}, fmt.Errorf("mappings: %s.json has no mappings._meta.version", kind)
	}
	if doc.Mappings.Dynamic != "strict" {
		return Index{}, fmt.Errorf("mappings: %s.json must set mappings.dynamic to strict", kind)
	}
	return Index{Kind: kind, Version: doc.Mappings.Meta.Version, Body: body}, nil
}

// All returns every index definition.
func All() ([]Index, error) {
	var out []Index
	for _, k := range []string{Notices, Register} {
		ix, err := Load(k)
		if err != nil {
			return nil, err
		}
		out = append(out, ix)
	}
	return out, nil
}
