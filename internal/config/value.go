package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// value is how one setting's text becomes its field of Config and back,
// and the check of that field on its own.
type value interface {
	// set parses s (never empty) into the field; the error says what is
	// wrong with it, to follow `NAME="s" `.
	set(c *Config, s string) error
	// get is the field as the environment would give it; "" when unset.
	get(c Config) string
	// check checks the field on its own (Validate runs it, also on a Config
	// built in code); its error names the setting.
	check(name string, c Config) error
}

// binder ties a row of the table to the settings it stands for: one, or
// one per plan.
type binder interface {
	bind(name string) []binding
}

// binding is one setting: its name and its value.
type binding struct {
	name string
	v    value
}

// field is a value of type T: where it lives in Config, how it is parsed
// and printed, and its check (nil: none).
type field[T any] struct {
	at     func(*Config) *T
	parse  func(string) (T, error)
	format func(T) string
	checks func(name string, v T) error
}

func (f field[T]) bind(name string) []binding { return []binding{{name, f}} }

func (f field[T]) set(c *Config, s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.at(c) = v
	return nil
}

func (f field[T]) get(c Config) string { return f.format(*f.at(&c)) }

func (f field[T]) check(name string, c Config) error {
	if f.checks == nil {
		return nil
	}
	return f.checks(name, *f.at(&c))
}

// text is a string setting as given.
func text(at func(*Config) *string, check func(name, v string) error) field[string] {
	return field[string]{at: at, parse: func(s string) (string, error) { return s, nil }, format: identity, checks: check}
}

// textOr is a string setting for which the word unset (any case) means
// none, as unsetting the variable does.
func textOr(unset string, at func(*Config) *string, check func(name, v string) error) field[string] {
	parse := func(s string) (string, error) {
		if strings.EqualFold(s, unset) {
			return "", nil
		}
		return s, nil
	}
	return field[string]{at: at, parse: parse, format: identity, checks: check}
}

func identity(s string) string { return s }

// list is a comma-separated list (spaces around the commas ignored); none
// (any case) is the empty list.
func list(at func(*Config) *[]string) field[[]string] {
	parse := func(s string) ([]string, error) {
		if strings.TrimSpace(s) == "" || strings.EqualFold(s, "none") {
			return nil, nil
		}
		var out []string
		for _, a := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(a))
		}
		return out, nil
	}
	return field[[]string]{at: at, parse: parse, format: func(v []string) string { return strings.Join(v, ",") }}
}

// duration is a positive duration such as 10m or 30s.
func duration(at func(*Config) *time.Duration, check func(name string, v time.Duration) error) field[time.Duration] {
	parse := func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("is not a positive duration such as 10m or 30s")
		}
		return d, nil
	}
	return field[time.Duration]{at: at, parse: parse, format: formatDuration, checks: check}
}

// formatDuration prints d as a setting is written: 15m, not 15m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// integer is an integer of at least min.
func integer(at func(*Config) *int, min int) field[int] {
	return field[int]{at: at, parse: intAtLeast(min), format: strconv.Itoa}
}

// intAtLeast parses an integer of at least min.
func intAtLeast(min int) func(string) (int, error) {
	return func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < min {
			return 0, fmt.Errorf("must be an integer of at least %d", min)
		}
		return n, nil
	}
}

// onOff is a switch: on/off, true/false, yes/no or 1/0.
func onOff(at func(*Config) *bool) field[bool] {
	parse := func(s string) (bool, error) {
		switch strings.ToLower(s) {
		case "1", "true", "on", "yes":
			return true, nil
		case "0", "false", "off", "no":
			return false, nil
		}
		return false, fmt.Errorf("must be on/off (or true/false)")
	}
	format := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return field[bool]{at: at, parse: parse, format: format}
}
