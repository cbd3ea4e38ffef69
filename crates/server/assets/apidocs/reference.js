// The API reference: Swagger UI renders /v1/openapi.json. "Try it out"
// sends the key signed in with in the console (this tab's session storage,
// this origin only), unless the Authorize dialog was given another.
const key = sessionStorage.getItem("mediagen.key");
document.getElementById("key-state").textContent = key
  ? "“Try it out” sends the key you signed in with in the console."
  : "Sign in at the console (or use Authorize) to try requests.";
window.ui = SwaggerUIBundle({
  url: "/v1/openapi.json",
  dom_id: "#api",
  deepLinking: true,
  // The key goes to this server only, whatever URL a request names.
  requestInterceptor: (req) => {
    const here = new URL(req.url, location.href).origin === location.origin;
    if (key && here && !req.headers.Authorization) req.headers.Authorization = `Bearer ${key}`;
    return req;
  },
});
