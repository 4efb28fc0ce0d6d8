package config

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// groups are the groups of Settings in the order they first appear.
func groups() []string {
	var out []string
	for _, s := range Settings {
		if len(out) == 0 || out[len(out)-1] != s.Group {
			out = append(out, s.Group)
		}
	}
	return out
}

// inGroup are the settings of group g, in order.
func inGroup(g string) []Setting {
	var out []Setting
	for _, s := range Settings {
		if s.Group == g {
			out = append(out, s)
		}
	}
	return out
}

// Reference is the settings reference of docs/operating.md, made from the
// table: one Markdown table per group.
func Reference() string {
	var b strings.Builder
	for i, g := range groups() {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "**%s**\n\n| variable | default | meaning |\n|---|---|---|\n", g)
		for _, s := range inGroup(g) {
			fmt.Fprintf(&b, "| `%s` | %s | %s%s |\n", s.Name, s.Default, secretNote(s), s.About)
		}
	}
	return b.String()
}

// secretNote opens the doc of a setting whose value is never shown.
func secretNote(s Setting) string {
	switch s.Secrecy {
	case Secret:
		return "secret (never logged; or from `" + s.fileSetting() + "`): "
	case Credentials:
		return "its password is never logged (or from `" + s.fileSetting() + "`): "
	}
	return ""
}

// WriteHelp writes the settings part of `noticesd --help`: every setting,
// group by group, with its default, secrets marked.
func WriteHelp(w io.Writer) {
	fmt.Fprint(w, "Settings come from the environment (defaults in brackets). A secret's value\n"+
		"is never logged; NAME_FILE may name a file holding it instead.\n")
	for _, g := range groups() {
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, s := range inGroup(g) {
			mark := map[Secrecy]string{Secret: " (secret)", Credentials: " (password never logged)"}[s.Secrecy]
			fmt.Fprintf(w, "  %-36s %s [%s]%s\n", s.Name, plain(s.About), s.Default, mark)
		}
	}
}

// mdLink is a Markdown link, [text](target).
var mdLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// plain is Markdown text as a terminal shows it: links as their text, no
// backticks.
func plain(md string) string {
	return strings.ReplaceAll(mdLink.ReplaceAllString(md, "$1"), "`", "")
}
