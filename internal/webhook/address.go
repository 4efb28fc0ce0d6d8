package webhook

import (
	"net"
	"net/netip"
	"net/url"
	"strings"

	"noticesd/internal/errs"
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
	u, err := url.Parse(raw)
	if err != nil {
		return errs.New(errs.InvalidWebhookURL, "webhook url %q could not be parsed (%s)%s", raw, parseReason(err), want)
	}
	if u.Scheme != "https" {
		if u.Scheme == "" {
			return errs.New(errs.InvalidWebhookURL, "webhook url %q is not absolute%s", raw, want)
		}
		return errs.New(errs.InvalidWebhookURL, "webhook url %q uses scheme %q; only https is delivered to%s", raw, u.Scheme, want)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return errs.New(errs.InvalidWebhookURL, "webhook url %q has no host%s", raw, want)
	}
	if u.User != nil {
		return errs.New(errs.InvalidWebhookURL, "webhook url %q contains user info before '@'; remove it (deliveries are authenticated by the X-Notices-Signature header)", raw)
	}
	if p := u.Port(); p != "" {
		if n, ok := atoiPort(p); !ok || n == 0 {
			return errs.New(errs.InvalidWebhookURL, "webhook url %q has port %q; use a port from 1 to 65535 or none (443)", raw, p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return errs.New(errs.InvalidWebhookURL, "webhook url %q has an empty port; remove the ':' or give a port from 1 to 65535", raw)
	}
	host := u.Hostname()
	addr, err := netip.ParseAddr(host)
	if err != nil {
		if numericLastLabel(host) {
			return errs.New(errs.InvalidWebhookURL, "webhook url host %q is neither a hostname nor a dotted-decimal IP address; use a DNS name", host)
		}
		if !allowPrivate && isLocalhost(host) {
			return errs.New(errs.InvalidWebhookURL, "webhook url host %q is the local machine; use a public https endpoint (private targets are allowed only when the deployment sets NOTICES_WEBHOOK_ALLOW_PRIVATE=true)", host)
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
