package webhook

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/noticesd/noticesd/internal/errs"
)

// blockedRange is an address range deliveries never go to unless private
// targets are allowed.
type blockedRange struct {
	prefix netip.Prefix
	what   string
}

// blockedRanges lists the ranges BlockedIP refuses. Metadata addresses come
// first so they are named as such.
var blockedRanges = []blockedRange{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this-network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved or broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local (private)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// nat64 is the well-known NAT64 prefix (RFC 6052); its last 32 bits are an
// IPv4 address that a NAT64 gateway would reach.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// BlockedIP reports whether deliveries must not go to ip unless private
// targets are allowed: loopback, RFC 1918 private, unique-local fc00::/7,
// link-local (169.254.0.0/16, fe80::/10), unspecified, multicast,
// 100.64.0.0/10 (carrier-grade NAT), cloud metadata (169.254.169.254,
// fd00:ec2::254), 0.0.0.0/8, 192.0.0.0/24, 198.18.0.0/15, 240.0.0.0/4,
// deprecated IPv6 site-local and IPv4-compatible forms, and the IPv4-mapped
// (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms of every IPv4 range.
// A nil or malformed ip is blocked.
func BlockedIP(ip net.IP) bool {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return true
	}
	return blockReason(addr) != ""
}

// blockReason names the blocked range addr falls in, or "" when addr is an
// ordinary public address.
func blockReason(addr netip.Addr) string {
	addr = addr.WithZone("").Unmap()
	if addr.Is6() && nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(addr) {
			return r.what
		}
	}
	return ""
}

// ValidateURL checks a webhook URL at registration. An empty (or blank) url
// gives errs.MissingURL. Anything but an absolute https:// URL with a host
// gives errs.InvalidWebhookURL, as do user info (user:pass@), an invalid
// port, a host whose last label is numeric but which is not an IP address
// (such as 2130706433 or 0x7f.1), and, unless allowPrivate, an IP-literal
// host in a range BlockedIP refuses or a localhost name. Hostnames are
// checked again against their resolved address on every connection (see
// Sender), so a name that resolves to a private address is refused then.
func ValidateURL(raw string, allowPrivate bool) error {
	if strings.TrimSpace(raw) == "" {
		return errs.New(errs.MissingURL, "webhook registration needs a url: send {\"url\": \"https://your-host.example/path\"}")
	}
	const want = "; send an absolute https:// URL such as https://hooks.example.com/notices"
	shown := errs.Quote(raw)
	if strings.TrimSpace(raw) != raw {
		return errs.New(errs.InvalidWebhookURL, "webhook url %s has spaces or line breaks before or after it%s, without them", shown, want)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errs.New(errs.InvalidWebhookURL, "webhook url %s could not be parsed (%s)%s", shown, parseReason(err), want)
	}
	if u.Scheme != "https" {
		if u.Scheme == "" {
			return errs.New(errs.InvalidWebhookURL, "webhook url %s is not absolute%s", shown, want)
		}
		return errs.New(errs.InvalidWebhookURL, "webhook url %s uses scheme %s; only https is delivered to%s", shown, errs.Quote(u.Scheme), want)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return errs.New(errs.InvalidWebhookURL, "webhook url %s has no host%s", shown, want)
	}
	if u.User != nil {
		return errs.New(errs.InvalidWebhookURL, "webhook url %s contains user info before '@'; remove it (deliveries are authenticated by the X-Notices-Signature header)", shown)
	}
	if p := u.Port(); p != "" {
		if n, ok := atoiPort(p); !ok || n == 0 {
			return errs.New(errs.InvalidWebhookURL, "webhook url %s has port %s; use a port from 1 to 65535 or none (443)", shown, errs.Quote(p))
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return errs.New(errs.InvalidWebhookURL, "webhook url %s has an empty port; remove the ':' or give a port from 1 to 65535", shown)
	}
	if why := hostProblem(rawAuthority(raw), u.Hostname()); why != "" {
		return errs.New(errs.InvalidWebhookURL, "webhook url host %s %s; use a DNS name such as hooks.example.com or an IP address", errs.Quote(u.Hostname()), why)
	}
	host := u.Hostname()
	addr, err := netip.ParseAddr(host)
	if err != nil {
		if numericLastLabel(host) {
			return errs.New(errs.InvalidWebhookURL, "webhook url host %s is neither a hostname nor a dotted-decimal IP address; use a DNS name", errs.Quote(host))
		}
		if !allowPrivate && isLocalhost(host) {
			return errs.New(errs.InvalidWebhookURL, "webhook url host %s is the local machine; use a public https endpoint (private targets are allowed only when the deployment sets NOTICES_WEBHOOK_ALLOW_PRIVATE=true)", errs.Quote(host))
		}
		return nil
	}
	if !allowPrivate {
		if why := blockReason(addr); why != "" {
			return errs.New(errs.InvalidWebhookURL, "webhook url host %s is a %s address; use a public https endpoint (private targets are allowed only when the deployment sets NOTICES_WEBHOOK_ALLOW_PRIVATE=true)", host, why)
		}
	}
	return nil
}

// maxHostLength is the longest DNS name (RFC 1035, in text form).
const maxHostLength = 253

// rawAuthority returns the authority of raw as sent, before url.Parse
// decodes any percent-encoding in it ("" when raw has no "//").
func rawAuthority(raw string) string {
	_, rest, ok := strings.Cut(raw, "//")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// hostProblem says why host (the parsed host name, authority the raw
// authority it came from) is neither a DNS name nor an IP literal, or ""
// when it is one. It runs before any lookup: a host with percent-encoding
// (also an IPv6 zone such as [fe80::1%25eth0]), a control character, a
// non-ASCII letter (send the xn-- form), an empty label or a character that
// no DNS name has is refused here, so no such string ever reaches a
// resolver.
func hostProblem(authority, host string) string {
	if strings.Contains(authority, "%") || strings.Contains(host, "%") {
		return "contains percent-encoding (or an IPv6 zone), which no DNS name or IP address has"
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c < 0x20 || c == 0x7f {
			return fmt.Sprintf("contains the control character 0x%02x at byte %d", c, i)
		}
		if c >= 0x80 {
			return "contains a non-ASCII character; send an internationalised name in its ASCII (xn--) form"
		}
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	if len(host) > maxHostLength {
		return fmt.Sprintf("is %d characters long; a DNS name has at most %d", len(host), maxHostLength)
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" {
			return "has an empty label (two dots in a row, or a leading dot)"
		}
		if len(label) > 63 {
			return "has a label longer than 63 characters"
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "has a label that starts or ends with '-'"
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Sprintf("contains %q, which no DNS name has", c)
			}
		}
	}
	return ""
}

// parseReason returns the part of a url.Parse error after the quoted URL.
func parseReason(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// atoiPort parses a decimal port number.
func atoiPort(s string) (int, bool) {
	if len(s) == 0 || len(s) > 5 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= 65535
}

// numericLastLabel reports whether host's last label is all digits or a 0x
// hex number: never a DNS name, but some resolvers read such hosts as IPv4
// addresses in shorthand forms (127.1, 2130706433, 0x7f000001).
func numericLastLabel(host string) bool {
	host = strings.TrimSuffix(host, ".")
	label := host[strings.LastIndexByte(host, '.')+1:]
	if label == "" {
		return false
	}
	if l := strings.ToLower(label); strings.HasPrefix(l, "0x") {
		label = l[2:]
		for _, c := range label {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
		return true
	}
	for _, c := range label {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isLocalhost reports whether host is "localhost" or under .localhost, which
// RFC 6761 reserves for the loopback interface.
func isLocalhost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}
