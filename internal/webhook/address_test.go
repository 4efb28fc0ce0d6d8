package webhook

import (
	"net"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
)

func TestBlockedIP(t *testing.T) {
	tests := []struct {
		ip      string
		blocked bool
	}{
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"203.0.113.9", false},
		{"2606:4700:4700::1111", false},
		{"172.32.0.1", false},
		{"100.128.0.1", false},
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"10.0.0.7", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"169.254.1.1", true},
		{"100.64.0.1", true},
		{"100.100.100.200", true},
		{"0.0.0.0", true},
		{"224.0.0.1", true},
		{"255.255.255.255", true},
		{"::", true},
		{"::1", true},
		{"fc00::1", true},
		{"fd00:ec2::254", true},
		{"fe80::1", true},
		{"ff02::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.7", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::a00:7", true},
		{"64:ff9b::808:808", false},
		{"::127.0.0.1", true},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			ip := net.ParseIP(tt.ip)
			if ip == nil {
				t.Fatalf("bad test address %q", tt.ip)
			}
			if got := BlockedIP(ip); got != tt.blocked {
				t.Fatalf("BlockedIP(%s) = %v, want %v", tt.ip, got, tt.blocked)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		if !BlockedIP(nil) {
			t.Fatal("BlockedIP(nil) = false, want true")
		}
	})
	t.Run("4-byte form", func(t *testing.T) {
		if !BlockedIP(net.IPv4(10, 1, 2, 3).To4()) {
			t.Fatal("BlockedIP(10.1.2.3 as 4 bytes) = false, want true")
		}
	})
}

func TestValidateURL(t *testing.T) {
	tests := []struct {
		name         string
		url          string
		allowPrivate bool
		code         errs.Code // "" means valid
		mention      string    // the message must contain this
	}{
		{"https host", "https://hooks.example.com/notices", false, "", ""},
		{"https host port query", "https://hooks.example.com:8443/n?x=1", false, "", ""},
		{"public ip literal", "https://203.0.113.9/hook", false, "", ""},
		{"public ipv6 literal", "https://[2606:4700::1]/hook", false, "", ""},
		{"uppercase scheme", "HTTPS://hooks.example.com/", false, "", ""},
		{"spaces around", "  https://hooks.example.com/h  ", false, errs.InvalidWebhookURL, "spaces or line breaks before or after it"},
		{"line break after", "https://hooks.example.com/h\n", false, errs.InvalidWebhookURL, "spaces or line breaks before or after it"},
		{"empty", "", false, errs.MissingURL, "url"},
		{"blank", "   ", false, errs.MissingURL, "url"},
		{"http", "http://hooks.example.com/", false, errs.InvalidWebhookURL, "https"},
		{"ftp", "ftp://hooks.example.com/", false, errs.InvalidWebhookURL, "https"},
		{"relative", "/hooks/notices", false, errs.InvalidWebhookURL, "absolute"},
		{"no scheme", "hooks.example.com/notices", false, errs.InvalidWebhookURL, "absolute"},
		{"no host", "https:///path", false, errs.InvalidWebhookURL, "no host"},
		{"opaque", "https:hooks.example.com", false, errs.InvalidWebhookURL, "no host"},
		{"port only", "https://:443/", false, errs.InvalidWebhookURL, "no host"},
		{"userinfo", "https://user:pass@hooks.example.com/", false, errs.InvalidWebhookURL, "user info"},
		{"user only", "https://user@hooks.example.com/", false, errs.InvalidWebhookURL, "user info"},
		{"bad port", "https://hooks.example.com:99999/", false, errs.InvalidWebhookURL, "port"},
		{"port zero", "https://hooks.example.com:0/", false, errs.InvalidWebhookURL, "port"},
		{"empty port", "https://hooks.example.com:/", false, errs.InvalidWebhookURL, "port"},
		{"unparsable", "https://hooks example.com/%zz", false, errs.InvalidWebhookURL, "parsed"},
		{"loopback", "https://127.0.0.1/hook", false, errs.InvalidWebhookURL, "loopback"},
		{"private", "https://10.0.0.7/hook", false, errs.InvalidWebhookURL, "NOTICES_WEBHOOK_ALLOW_PRIVATE"},
		{"metadata", "https://169.254.169.254/latest", false, errs.InvalidWebhookURL, "metadata"},
		{"ipv6 loopback", "https://[::1]:8443/", false, errs.InvalidWebhookURL, "loopback"},
		{"ipv6 link-local zone", "https://[fe80::1%25eth0]/", false, errs.InvalidWebhookURL, "percent-encoding"},
		{"percent-encoded tab", "https://127.0.0.1%2509/hook", true, errs.InvalidWebhookURL, "percent-encoding"},
		{"percent-encoded letter", "https://hooks.ex%C3%A4mple.com/", true, errs.InvalidWebhookURL, "percent-encoding"},
		{"non-ascii name", "https://hooks.exämple.com/", false, errs.InvalidWebhookURL, "xn--"},
		{"empty label", "https://hooks..example.com/", false, errs.InvalidWebhookURL, "empty label"},
		{"hyphen edge", "https://-hooks.example.com/", false, errs.InvalidWebhookURL, "'-'"},
		{"odd character", "https://hooks!.example.com/", false, errs.InvalidWebhookURL, "no DNS name has"},
		{"long label", "https://" + strings.Repeat("a", 64) + ".example.com/", false, errs.InvalidWebhookURL, "63"},
		{"long name", "https://" + strings.Repeat("abcdefghi.", 26) + "com/", false, errs.InvalidWebhookURL, "at most 253"},
		{"underscore label", "https://hooks_1.example.com/", false, "", ""},
		{"trailing dot", "https://hooks.example.com./", false, "", ""},
		{"huge url echo bounded", "ftp://" + strings.Repeat("a", 100000), false, errs.InvalidWebhookURL, "(100006 bytes)"},
		{"mapped private", "https://[::ffff:192.168.0.1]/", false, errs.InvalidWebhookURL, "private"},
		{"localhost", "https://localhost:8443/", false, errs.InvalidWebhookURL, "local machine"},
		{"sub.localhost", "https://api.LOCALHOST./", false, errs.InvalidWebhookURL, "local machine"},
		{"decimal ip", "https://2130706433/", false, errs.InvalidWebhookURL, "dotted-decimal"},
		{"short ip", "https://127.1/", true, errs.InvalidWebhookURL, "dotted-decimal"},
		{"hex ip", "https://0x7f000001/", true, errs.InvalidWebhookURL, "dotted-decimal"},
		{"loopback allowed", "https://127.0.0.1:8443/hook", true, "", ""},
		{"private allowed", "https://10.0.0.7/hook", true, "", ""},
		{"localhost allowed", "https://localhost:8443/", true, "", ""},
		{"http even if allowed", "http://127.0.0.1/", true, errs.InvalidWebhookURL, "https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateURL(tt.url, tt.allowPrivate)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("ValidateURL(%q) = %v, want nil", tt.url, err)
				}
				return
			}
			e, ok := errs.As(err)
			if !ok || e.Code != tt.code {
				t.Fatalf("ValidateURL(%q) = %v, want code %s", tt.url, err, tt.code)
			}
			if !strings.Contains(e.Message, tt.mention) {
				t.Fatalf("ValidateURL(%q) message %q does not mention %q", tt.url, e.Message, tt.mention)
			}
		})
	}
}
