<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
    <xsl:template match="/order">
        <ORDER><xsl:value-of select="translate(symbol, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')"/></ORDER>
    </xsl:template>
</xsl:stylesheet>
