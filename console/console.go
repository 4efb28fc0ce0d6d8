// Package console embeds the analyst console (GET /console): a plain
// HTML/CSS/JS page, ES modules with no build step and no library, that
// calls the API from the browser with the key the analyst enters. It loads
// nothing from any other host; its Content-Security-Policy says so to the
// browser.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
	"sort"
)

//go:embed assets
var files embed.FS

// CSP is the Content-Security-Policy of every console response: scripts,
// styles, images and fetches from the serving origin only; no inline script
// or style, no plugins, no framing, no form posts elsewhere.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// CacheControl is the Cache-Control of every console response: the
// browser keeps the files but asks again each time (If-None-Match), so a
// new binary's console is used at once.
const CacheControl = "no-cache"

// Index is the name of the page served at /console.
const Index = "index.html"

// Asset is one embedded file with what the server sends with it.
type Asset struct {
	// Name is the file name under /console/ (index.html is also /console).
	Name string
	// ContentType is the Content-Type header.
	ContentType string
	// ETag is a strong entity tag of the content (quoted).
	ETag string
	// Body is the content.
	Body []byte
}

// contentTypes are the types of the file kinds the console ships; a file
// of another kind in assets/ makes Assets panic at start (and its test fail).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

var assets = load()

func load() map[string]Asset {
	out := map[string]Asset{}
	err := fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			panic("console: no content type for " + p)
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		name := path.Base(p)
		out[name] = Asset{Name: name, ContentType: ct, ETag: `"` + hex.EncodeToString(sum[:12]) + `"`, Body: body}
		return nil
	})
	if err != nil {
		panic("console: " + err.Error())
	}
	return out
}

// Lookup returns the asset named name (a file name, no directory).
func Lookup(name string) (Asset, bool) {
	a, ok := assets[name]
	return a, ok
}

// Names lists every embedded file name, sorted.
func Names() []string {
	out := make([]string, 0, len(assets))
	for n := range assets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
