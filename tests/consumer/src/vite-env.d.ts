// What Vite's `?worker&url` import gives: the built worker script's URL.
declare module "*?worker&url" {
  const url: string;
  export default url;
}
