package config

import (
	"strings"
	"testing"
	"time"
)

func TestFromLookup(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{"defaults", nil, "", func(t *testing.T, c Config) {
			if c.Addr != ":8080" || c.DataDir != "./data" || c.Backend != "embedded" || !c.Webhooks ||
				c.DeliveryRetryUnit != 10*time.Minute || c.DeliveryTimeout != 10*time.Second || c.CollectInterval != 15*time.Minute {
				t.Errorf("defaults: %+v", c)
			}
			if c.Plans["free"].Companies != 100 || c.Plans["standard"].Watches != 20 || c.Plans["enterprise"].Companies != 1000000 {
				t.Errorf("plans: %+v", c.Plans)
			}
		}},
		{"overrides", map[string]string{"NOTICES_WEBHOOKS": "off", "NOTICES_DELIVERY_RETRY_UNIT": "1s", "NOTICES_SOURCE": "none"}, "", func(t *testing.T, c Config) {
			if c.Webhooks || c.DeliveryRetryUnit != time.Second || c.Source != "" {
				t.Errorf("got %+v", c)
			}
		}},
		{"bad duration", map[string]string{"NOTICES_DELIVERY_TIMEOUT": "soon"}, "NOTICES_DELIVERY_TIMEOUT", nil},
		{"bad bool", map[string]string{"NOTICES_WEBHOOKS": "maybe"}, "NOTICES_WEBHOOKS", nil},
		{"bad backend", map[string]string{"NOTICES_BACKEND": "mongo"}, "NOTICES_BACKEND", nil},
		{"scale needs urls", map[string]string{"NOTICES_BACKEND": "scale"}, "NOTICES_ELASTICSEARCH_URL", nil},
		{"default namespace", nil, "", func(t *testing.T, c Config) {
			if c.Namespace != "notices" {
				t.Errorf("namespace %q, want notices", c.Namespace)
			}
		}},
		{"namespace", map[string]string{"NOTICES_NAMESPACE": "staging-2"}, "", func(t *testing.T, c Config) {
			if c.Namespace != "staging-2" {
				t.Errorf("namespace %q, want staging-2", c.Namespace)
			}
		}},
		{"namespace upper case", map[string]string{"NOTICES_NAMESPACE": "Prod"}, "NOTICES_NAMESPACE", nil},
		{"namespace wildcard", map[string]string{"NOTICES_NAMESPACE": "a*"}, "NOTICES_NAMESPACE", nil},
		{"namespace leading dash", map[string]string{"NOTICES_NAMESPACE": "-a"}, "NOTICES_NAMESPACE", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := fromLookup(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want mention of %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}
