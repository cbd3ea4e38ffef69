// The console's entry: theme, the one-clip player, then the app.
import "./lib/tokens.css";
import "./lib/base.css";
import "./lib/player";
import { mount } from "svelte";
import { applyTheme } from "./lib/theme";
import App from "./App.svelte";

applyTheme();
mount(App, { target: document.getElementById("app")! });
