package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// secretFromFile returns the value of the secret setting name: raw (its
// value in the environment), or what the file name_FILE names holds.
// Both set is an error.
func (c *Config) secretFromFile(name, raw string, lookup func(string) (string, bool)) (string, error) {
	fileSetting := name + "_FILE"
	path, _ := lookup(fileSetting)
	if path == "" {
		return raw, nil
	}
	if raw != "" {
		return "", fmt.Errorf("%s and %s are both set; set one of them", name, fileSetting)
	}
	v, err := readSecretFile(fileSetting, path, "the value of "+name)
	if err != nil {
		return "", err
	}
	c.noteFile(fileSetting, path)
	return v, nil
}

// passwordFromFile puts the password the file <STEM>_PASSWORD_FILE names
// into the URLs of the credentials setting b, when that file is set.
func (c *Config) passwordFromFile(s Setting, b binding, lookup func(string) (string, bool)) error {
	fileSetting := s.fileSetting()
	path, _ := lookup(fileSetting)
	if path == "" {
		return nil
	}
	u, err := withPasswordFile(b.name, b.v.get(*c), fileSetting, path)
	if err != nil {
		return err
	}
	c.noteFile(fileSetting, path)
	return b.v.set(c, u)
}

// noteFile records that a secret was read from the file setting names.
func (c *Config) noteFile(setting, path string) {
	if c.files == nil {
		c.files = map[string]string{}
	}
	c.files[setting] = path
}

// readSecretFile reads a file holding one secret (as a compose or
// Kubernetes secret mounts it), without the white space around it;
// setting names the variable that gave path and what the secret it must
// hold is, for messages.
func readSecretFile(setting, path, what string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s=%q cannot be read: %v", setting, path, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s=%q is empty; it must hold %s", setting, path, what)
	}
	return s, nil
}

// withPasswordFile returns the comma-separated URLs of list (the value of
// urlSetting) with the password read from path (the value of fileSetting)
// put beside the user each of them names: the password stays out of the
// URL setting, so out of the environment `docker inspect` shows. Every URL
// must name a user and carry no password of its own.
func withPasswordFile(urlSetting, list, fileSetting, path string) (string, error) {
	urls := SplitURLs(list)
	if len(urls) == 0 {
		return "", fmt.Errorf("%s is set but %s is not; give the URL with its user and without the password", fileSetting, urlSetting)
	}
	pw, err := readSecretFile(fileSetting, path, "the password")
	if err != nil {
		return "", err
	}
	var out []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.User == nil || u.User.Username() == "" {
			return "", fmt.Errorf("%s is set but %s=%q names no user; give the user in the URL without its password, e.g. https://noticesd@es1:9200 or rediss://noticesd@redis:6380/0", fileSetting, urlSetting, redactURL(raw))
		}
		if _, has := u.User.Password(); has {
			return "", fmt.Errorf("%s is set and %s=%q has a password too; give the password in one of them", fileSetting, urlSetting, redactURL(raw))
		}
		u.User = url.UserPassword(u.User.Username(), pw)
		out = append(out, u.String())
	}
	return strings.Join(out, ","), nil
}
