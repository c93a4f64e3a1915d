/** elements.js: the classic script, defining `window.VaultElements`. */
import { VaultElements } from './api';

(window as unknown as { VaultElements: typeof VaultElements }).VaultElements = VaultElements;
