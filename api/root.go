package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// rootResponse is GET / for a program: where the service's own routes are.
type rootResponse struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Docs    string `json:"docs"`
	OpenAPI string `json:"openapi"`
	Health  string `json:"health"`
}

// root is GET / (no key): a browser (Accept naming text/html) is
// redirected to /docs; anything else gets JSON linking /docs,
// /openapi.json and /health, so a first request to the bare address finds
// its way.
func (s *Server) root(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Vary(fiber.HeaderAccept)
	if strings.Contains(c.Get(fiber.HeaderAccept), "text/html") {
		return c.Redirect("/docs", fiber.StatusFound)
	}
	return writeJSON(c, fiber.StatusOK, rootResponse{
		Name: "noticesd", Version: s.deps.Build.Version,
		Docs: "/docs", OpenAPI: "/openapi.json", Health: "/health",
	})
}
