/** The product's icon: a white handset on blue. */
export const FAVICON_SVG =
  "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'><rect width='32' height='32' rx='6' fill='#1f5fbf'/><path d='M10 8c2 0 3 4 3 5s-2 2-2 3 3 5 5 5 2-2 3-2 5 1 5 3-2 3-4 3C13 25 7 19 7 11c0-2 1-3 3-3z' fill='white'/></svg>";

/** The icon inline, for the console's page, which then asks the server for nothing more. */
export const FAVICON_DATA_URL = `data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}`;
