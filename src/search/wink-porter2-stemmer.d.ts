/** wink-porter2-stemmer ships no types: one function, a word's English stem (Porter2). */
declare module 'wink-porter2-stemmer' {
  export default function stem(word: string): string
}
