// The entry point of the page (index.html loads it): everything else is imported without side effects, and
// starts here.

import { start } from "./page.js";

start();
